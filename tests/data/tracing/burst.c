/* A disturbance of known name and size: spins BURST_US of every EVERY_US on CPU, as "jl-burst", at
 * SCHED_FIFO PRIO, for SECONDS. Usage: burst CPU PRIO BURST_US EVERY_US SECONDS */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

static long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(int argc, char **argv)
{
    if (argc != 6) {
        fprintf(stderr, "usage: burst CPU PRIO BURST_US EVERY_US SECONDS\n");
        return 2;
    }
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(atoi(argv[1]), &set);
    struct sched_param param = {.sched_priority = atoi(argv[2])};
    if (sched_setaffinity(0, sizeof set, &set) != 0 || sched_setscheduler(0, SCHED_FIFO, &param) != 0) {
        perror("burst");
        return 1;
    }
    prctl(PR_SET_NAME, "jl-burst", 0, 0, 0);
    long long burst = atoll(argv[3]) * 1000LL, every = atoll(argv[4]) * 1000LL;
    long long end = now_ns() + (long long)(atof(argv[5]) * 1e9);
    for (long long next = now_ns(); next < end; next += every) {
        struct timespec at = {.tv_sec = next / 1000000000LL, .tv_nsec = next % 1000000000LL};
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL);
        for (long long t0 = now_ns(); now_ns() - t0 < burst;)
            ;
    }
    return 0;
}
