/*
 * shim.so: an LD_PRELOAD shim for the private httpd of t/clock.t and
 * t/dns.t (RLaaS::Test::private_httpd builds it):
 *  - the wall clock is moved by the number of seconds written in the file
 *    named by $RLAAS_CLOCK_SHIFT_FILE (no file, or 0: the real time); or,
 *    when the file holds '@' and a number of milliseconds since the epoch,
 *    it reads exactly that, stopped (t/calendar.t: a request at
 *    23:59:59.999 and one at midnight); the monotonic clock is left
 *    alone, which is the point. redis-server can run under it too;
 *  - with $RLAAS_SLOW_DNS_MS set, looking up a host name (not a numeric
 *    address) takes that long, as with a DNS server far away.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netdb.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

/* The file's word: a shift in seconds, or ('@') a stopped time in ms
 * into *at_ms (then 1). */
static long shift_s(long long *at_ms, int *stopped)
{
    const char *f = getenv("RLAAS_CLOCK_SHIFT_FILE");
    char buf[32];
    ssize_t n;
    int fd;

    *stopped = 0;
    if (f == NULL || (fd = open(f, O_RDONLY)) < 0)
        return 0;
    n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    if (buf[0] == '@') {
        *at_ms = strtoll(buf + 1, NULL, 10);
        *stopped = 1;
        return 0;
    }
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
    if (rc == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE)) {
        long long at_ms = 0;
        int stopped;
        long s = shift_s(&at_ms, &stopped);

        if (stopped) {
            ts->tv_sec = (time_t)(at_ms / 1000);
            ts->tv_nsec = (long)(at_ms % 1000) * 1000000;
        }
        else
            ts->tv_sec += s;
    }
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

static int numeric(const char *node)
{
    unsigned char buf[16];

    return inet_pton(AF_INET, node, buf) == 1 ||
           inet_pton(AF_INET6, node, buf) == 1;
}

int getaddrinfo(const char *node, const char *service,
                const struct addrinfo *hints, struct addrinfo **res)
{
    static int (*real)(const char *, const char *, const struct addrinfo *,
                       struct addrinfo **);
    const char *ms = getenv("RLAAS_SLOW_DNS_MS");

    if (real == NULL)
        real = (int (*)(const char *, const char *, const struct addrinfo *,
                        struct addrinfo **))dlsym(RTLD_NEXT, "getaddrinfo");
    if (ms != NULL && node != NULL && !numeric(node))
        usleep((useconds_t)atoi(ms) * 1000);
    return real(node, service, hints, res);
}
