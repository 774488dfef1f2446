/* Shared by the UDP programs (udp-echo-server/-client, pps-send/-recv): flags,
 * addresses and sockets, scheduling policies (SCHED_DEADLINE via the raw
 * sched_setattr syscall) and one-line errors. The stop signals, clock, number
 * parsing and file writing come from sw_common.h. Everything is static inline so
 * a program that does not use a helper gets no unused-function warning. */
#ifndef JITTERLAB_UDP_COMMON_H
#define JITTERLAB_UDP_COMMON_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include "sw_common.h"

#ifndef SCHED_DEADLINE
#define SCHED_DEADLINE 6
#endif

/* Exit statuses the benchmarks read: 2 bad flags, 3 the kernel refused the
 * scheduling policy, 1 anything else that went wrong. */
#define UDP_EXIT_USAGE 2
#define UDP_EXIT_POLICY 3

/* A setup step failed: say which and why on one line, exit 1. */
static inline void udp_die(const char *prog, const char *what)
{
    fprintf(stderr, "%s: %s: %s\n", prog, what, strerror(errno));
    exit(1);
}

static inline void udp_bad_flag(const char *prog, const char *flag, const char *val)
{
    fprintf(stderr, "%s: bad flag or value: %s %s (see --help)\n", prog, flag, val ? val : "");
    exit(UDP_EXIT_USAGE);
}

static inline void udp_usage_error(const char *prog, const char *why)
{
    fprintf(stderr, "%s: %s (see --help)\n", prog, why);
    exit(UDP_EXIT_USAGE);
}

/* A numeric IPv4 or IPv6 address and a port -> sockaddr; anything else is a usage error
 * that names the flag the address came from. */
static inline socklen_t udp_address(const char *prog, const char *flag, const char *host,
                                    int64_t port, struct sockaddr_storage *sa)
{
    memset(sa, 0, sizeof *sa);
    struct sockaddr_in *v4 = (struct sockaddr_in *)sa;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)sa;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        return sizeof *v4;
    }
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        return sizeof *v6;
    }
    fprintf(stderr, "%s: %s needs a numeric IPv4 or IPv6 address (see --help)\n", prog, flag);
    exit(UDP_EXIT_USAGE);
}

static inline int udp_socket(const char *prog, const struct sockaddr_storage *sa)
{
    int fd = socket(sa->ss_family, SOCK_DGRAM, 0);
    if (fd < 0)
        udp_die(prog, "cannot create a UDP socket");
    return fd;
}

/* The sender's socket: connected, so send() needs no address and the kernel drops strays. */
static inline int udp_connected_socket(const char *prog, const struct sockaddr_storage *sa,
                                       socklen_t len)
{
    int fd = udp_socket(prog, sa);
    if (connect(fd, (const struct sockaddr *)sa, len) != 0)
        udp_die(prog, "cannot connect the UDP socket");
    return fd;
}

/* Bind a receiver's socket. A blocking receive returns every 100 ms, so the receive loop
 * checks its life limit (and the stop flag) even when nothing arrives. */
static inline void udp_bind(const char *prog, int fd, const char *host, int64_t port,
                            const struct sockaddr_storage *sa, socklen_t len)
{
    if (bind(fd, (const struct sockaddr *)sa, len) != 0) {
        fprintf(stderr, "%s: cannot bind %s port %lld: %s\n", prog, host, (long long)port,
                strerror(errno));
        exit(1);
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = 100000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

/* --- scheduling policies ------------------------------------------------------------------ */

enum udp_policy { UDP_OTHER, UDP_FIFO, UDP_RR, UDP_DEADLINE };

struct udp_sched {
    enum udp_policy policy;
    int prio;             /* fifo, rr: 1..99 */
    int64_t dl_runtime_ns; /* deadline: budget per period */
    int64_t dl_period_ns;  /* deadline: period, and the relative deadline */
    int allow_no_rt;       /* a refused policy is a warning, the program runs as SCHED_OTHER */
};

/* The --policy value that names a policy. */
static inline const char *udp_policy_flag_value(enum udp_policy policy)
{
    static const char *const names[] = {"other", "fifo", "rr", "deadline"};
    return names[policy];
}

static inline int udp_parse_policy(const char *s, enum udp_policy *out)
{
    for (int i = 0; i < 4; i++)
        if (strcmp(s, udp_policy_flag_value((enum udp_policy)i)) == 0) {
            *out = (enum udp_policy)i;
            return 0;
        }
    return -1;
}

/* The kernel's struct sched_attr (include/uapi/linux/sched/types.h); glibc < 2.41 has no
 * sched_setattr wrapper, so we define the struct and call the syscall ourselves. */
struct udp_sched_attr {
    uint32_t size;
    uint32_t sched_policy;
    uint64_t sched_flags;
    int32_t sched_nice;
    uint32_t sched_priority;
    uint64_t sched_runtime;
    uint64_t sched_deadline;
    uint64_t sched_period;
};

static inline int udp_sched_setattr(const struct udp_sched_attr *attr)
{
#ifdef SYS_sched_setattr
    return (int)syscall(SYS_sched_setattr, 0, attr, 0);
#else
    (void)attr;
    errno = ENOSYS;
    return -1;
#endif
}

static inline const char *udp_errno_name(int err)
{
    switch (err) {
    case EPERM: return "EPERM";
    case EINVAL: return "EINVAL";
    case EBUSY: return "EBUSY";
    case ENOSYS: return "ENOSYS";
    case E2BIG: return "E2BIG";
    default: return "errno";
    }
}

/* What the user can do about a refused policy. */
static inline const char *udp_policy_remedy(enum udp_policy policy, int err)
{
    if (policy == UDP_DEADLINE) {
        switch (err) {
        case EBUSY:
            return "admission control: the reserved bandwidth (runtime/period) does not fit the "
                   "deadline/RT limit; raise /proc/sys/kernel/sched_rt_runtime_us (-1 lifts it) "
                   "or use a longer interval";
        case EPERM:
            return "needs root or CAP_SYS_NICE, an affinity spanning all CPUs of its root "
                   "domain (no taskset/cpuset restriction) and, in a cgroup with RT group "
                   "scheduling, a cgroup that allows it";
        case EINVAL:
            return "the kernel rejects these parameters: the period (the interval) must lie "
                   "within /proc/sys/kernel/sched_deadline_period_{min,max}_us";
        case ENOSYS:
            return "this kernel has no sched_setattr (Linux >= 3.14 with SCHED_DEADLINE)";
        default:
            return "see sched_setattr(2)";
        }
    }
    if (err == EPERM)
        return "run as root, or grant CAP_SYS_NICE or an rtprio limit; in a cgroup with RT "
               "group scheduling give it cpu.rt_runtime_us";
    return "see sched_setscheduler(2)";
}

static inline const char *udp_policy_name(enum udp_policy policy)
{
    static const char *const names[] = {"SCHED_OTHER", "SCHED_FIFO", "SCHED_RR", "SCHED_DEADLINE"};
    return names[policy];
}

/* Put the calling process in its policy. A refusal is one line and exit 3, or a warning line
 * with allow_no_rt. Memory is locked for the real-time classes so a reply never page-faults. */
static inline void udp_apply_sched(const char *prog, const struct udp_sched *s)
{
    int rc = 0;
    if (s->policy == UDP_OTHER)
        return;
    if (s->policy == UDP_DEADLINE) {
        struct udp_sched_attr attr;
        memset(&attr, 0, sizeof attr);
        attr.size = sizeof attr;
        attr.sched_policy = SCHED_DEADLINE;
        attr.sched_runtime = (uint64_t)s->dl_runtime_ns;
        attr.sched_deadline = (uint64_t)s->dl_period_ns;
        attr.sched_period = (uint64_t)s->dl_period_ns;
        rc = udp_sched_setattr(&attr);
    } else {
        struct sched_param param = {.sched_priority = s->prio};
        rc = sched_setscheduler(0, s->policy == UDP_FIFO ? SCHED_FIFO : SCHED_RR, &param);
    }
    if (rc != 0) {
        int err = errno;
        if (s->allow_no_rt) {
            printf("warning: %s refused by the kernel (%s), running as SCHED_OTHER\n",
                   udp_policy_name(s->policy), udp_errno_name(err));
            fflush(stdout);
            return;
        }
        fprintf(stderr, "%s: %s refused by the kernel: %s (%s); %s\n", prog,
                udp_policy_name(s->policy), strerror(err), udp_errno_name(err),
                udp_policy_remedy(s->policy, err));
        exit(UDP_EXIT_POLICY);
    }
    mlockall(MCL_CURRENT | MCL_FUTURE);
}

/* The scheduling flags every UDP program accepts; returns 1 if argv[*i] was one of them. */
static inline int udp_sched_flag(const char *prog, int argc, char **argv, int *i, struct udp_sched *s)
{
    const char *flag = argv[*i];
    if (strcmp(flag, "--allow-no-rt") == 0) {
        s->allow_no_rt = 1;
        return 1;
    }
    if (strcmp(flag, "--policy") != 0 && strcmp(flag, "--prio") != 0 &&
        strcmp(flag, "--dl-runtime-ns") != 0 && strcmp(flag, "--dl-period-ns") != 0)
        return 0;
    if (*i + 1 >= argc)
        udp_bad_flag(prog, flag, NULL);
    const char *val = argv[++*i];
    int64_t n = 0;
    if (strcmp(flag, "--policy") == 0) {
        if (udp_parse_policy(val, &s->policy) != 0)
            udp_bad_flag(prog, flag, val);
    } else if (strcmp(flag, "--prio") == 0) {
        if (sw_parse_int(val, 1, 99, &n) != 0)
            udp_bad_flag(prog, flag, val);
        s->prio = (int)n;
    } else if (sw_parse_int(val, 1024, 4000000000LL, &n) != 0) {
        udp_bad_flag(prog, flag, val);
    } else if (strcmp(flag, "--dl-runtime-ns") == 0) {
        s->dl_runtime_ns = n;
    } else {
        s->dl_period_ns = n;
    }
    return 1;
}

static inline void udp_check_sched(const char *prog, const struct udp_sched *s)
{
    if (s->policy == UDP_DEADLINE && (s->dl_runtime_ns == 0 || s->dl_period_ns == 0))
        udp_usage_error(prog, "--policy deadline needs --dl-runtime-ns and --dl-period-ns");
    if (s->dl_runtime_ns > s->dl_period_ns)
        udp_usage_error(prog, "--dl-runtime-ns must not exceed --dl-period-ns");
}

#define UDP_SCHED_USAGE "[--policy other|fifo|rr|deadline] [--prio 1-99] " \
    "[--dl-runtime-ns N --dl-period-ns N] [--allow-no-rt]"

/* A flag that takes a value: a string, or a number in [lo, hi]. */
struct udp_flag {
    const char *name;
    const char **str;
    int64_t *num;
    int64_t lo, hi;
};

/* Parse argv against `flags` (ended by a {NULL} entry) and, if `sched` is given, the
 * scheduling flags; --help prints `usage` and exits 0, a bad flag or value exits 2. */
static inline void udp_parse_flags(const char *prog, const char *usage, int argc, char **argv,
                                   const struct udp_flag *flags, struct udp_sched *sched)
{
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0) {
            fputs(usage, stdout);
            exit(0);
        }
        if (sched != NULL && udp_sched_flag(prog, argc, argv, &i, sched))
            continue;
        if (i + 1 >= argc)
            udp_bad_flag(prog, flag, NULL);
        const char *val = argv[++i];
        const struct udp_flag *f = flags;
        while (f->name != NULL && strcmp(flag, f->name) != 0)
            f++;
        if (f->name != NULL && f->str != NULL)
            *f->str = val;
        else if (f->name == NULL || sw_parse_int(val, f->lo, f->hi, f->num) != 0)
            udp_bad_flag(prog, flag, val);
    }
}

#endif
