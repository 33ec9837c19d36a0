/*
 * bench/wake.c - what it costs this machine to hand control to a sleeping
 * thread: two threads take turns through a futex word, each sleeping until
 * the other wakes it. Printed: microseconds per hand-off (one wake-up and
 * the switch to the woken thread), with the two threads on different CPUs
 * and on the same CPU.
 *
 * A limited request sleeps while Redis answers and is woken once when the
 * answer is in, so this is the floor under what the module adds to a
 * request, before Redis does any work. make bench prints it beside the
 * Redis round trip.
 *
 *   cc -O2 -pthread -o wake bench/wake.c && ./wake [rounds]
 */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int turn; /* 0: the main thread's turn, 1: the other's */
static long rounds = 100000;

static void sleep_while(int v)
{
    while (__atomic_load_n(&turn, __ATOMIC_ACQUIRE) == v)
        syscall(SYS_futex, &turn, FUTEX_WAIT_PRIVATE, v, NULL, NULL, 0);
}

static void give(int v)
{
    __atomic_store_n(&turn, v, __ATOMIC_RELEASE);
    syscall(SYS_futex, &turn, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void pin(int cpu)
{
    cpu_set_t set;

    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

static void *other(void *arg)
{
    long i;

    pin((int)(long)arg);
    for (i = 0; i < rounds; i++) {
        sleep_while(0);
        give(0);
    }
    return NULL;
}

/* Microseconds per hand-off with the threads on cpu_a and cpu_b. */
static double handoff_us(int cpu_a, int cpu_b)
{
    struct timespec t0, t1;
    pthread_t t;
    long i;

    turn = 0;
    pin(cpu_a);
    pthread_create(&t, NULL, other, (void *)(long)cpu_b);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (i = 0; i < rounds; i++) {
        give(1);
        sleep_while(1);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    pthread_join(t, NULL);
    return ((t1.tv_sec - t0.tv_sec) * 1e6 + (t1.tv_nsec - t0.tv_nsec) / 1e3) /
           (2.0 * rounds);
}

int main(int argc, char **argv)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);

    if (argc > 1)
        rounds = atol(argv[1]) > 0 ? atol(argv[1]) : rounds;
    if (cpus > 1)
        printf("thread hand-off, other CPU: %.1f us\n", handoff_us(0, 1));
    printf("thread hand-off, same CPU: %.1f us\n", handoff_us(0, 0));
    return 0;
}
