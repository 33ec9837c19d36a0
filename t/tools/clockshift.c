/*
 * clockshift.so: an LD_PRELOAD shim for t/clock.t that steps the wall
 * clock of one process (httpd) by the number of seconds written in the
 * file named by $RLAAS_CLOCK_SHIFT_FILE (no file, or 0: the real time).
 * The monotonic clock is left alone: that is the point of the test.
 * Built by the test itself: cc -shared -fPIC -o clockshift.so clockshift.c
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

static long shift_s(void)
{
    const char *f = getenv("RLAAS_CLOCK_SHIFT_FILE");
    char buf[32];
    ssize_t n;
    int fd;

    if (f == NULL || (fd = open(f, O_RDONLY)) < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return strtol(buf, NULL, 10);
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
    static int (*real)(clockid_t, struct timespec *);
    int rc;

    if (real == NULL)
        real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT,
                                                            "clock_gettime");
    rc = real(id, ts);
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
        ts->tv_sec += shift_s();
    return rc;
}

int gettimeofday(struct timeval *tv, void *tz)
{
    struct timespec ts;

    (void)tz;
    if (clock_gettime(CLOCK_REALTIME, &ts) != 0)
        return -1;
    tv->tv_sec = ts.tv_sec;
    tv->tv_usec = ts.tv_nsec / 1000;
    return 0;
}

time_t time(time_t *t)
{
    struct timespec ts;

    clock_gettime(CLOCK_REALTIME, &ts);
    if (t != NULL)
        *t = ts.tv_sec;
    return ts.tv_sec;
}
