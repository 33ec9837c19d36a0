#include "rlaas_clock.h"

int64_t rlaas_clock_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

void rlaas_clock_timespec(int64_t at_us, struct timespec *ts)
{
    if (at_us < 0)
        at_us = 0;
    ts->tv_sec = (time_t)(at_us / 1000000);
    ts->tv_nsec = (long)(at_us % 1000000) * 1000;
}

int64_t rlaas_clock_left_us(int64_t at_us)
{
    int64_t left = at_us - rlaas_clock_us();

    return left > 0 ? left : 0;
}
