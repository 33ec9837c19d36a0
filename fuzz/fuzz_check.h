/* CHECK(c): a fuzz target's invariant. A failure names the condition and
 * aborts, which libFuzzer reports as a crash and saves as a reproducer. */
#ifndef RLAAS_FUZZ_CHECK_H
#define RLAAS_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "invariant failed: %s (%s:%d)\n", #c, __FILE__,    \
                    __LINE__);                                                 \
            abort();                                                           \
        }                                                                      \
    } while (0)

#endif
