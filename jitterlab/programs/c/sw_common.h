/* Shared by every C program: stop signals, clock, number flags and files written
 * whole; and, for the square-wave programs and the observer, their flags,
 * prefaulting, the pin and the self-log; for the probes, the capture they write. udp_common.h builds on it. Everything is
 * static inline so a program that does not use a helper gets no unused-function
 * warning. */
#ifndef JITTERLAB_SW_COMMON_H
#define JITTERLAB_SW_COMMON_H

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#define SW_USAGE                                                                      \
    "usage: %s --period-ns N --duration-ns N (--pin PATH | --gpiomem DEV --map-base A "  \
    "--map-len N --set-reg OFF --clr-reg OFF --mask M [--dir-reg OFF --dir-clear M "      \
    "--dir-set M] [--write set-clear|masked|rmw]) --log PATH [--prio N] [--allow-no-rt] [--mlock]\n"

/* 16 M edges * 8 bytes = 128 MiB: a sane ceiling for a buffer we prefault. */
#define SW_MAX_LOGGED_EDGES (16u * 1024u * 1024u)

static volatile sig_atomic_t sw_stop_requested = 0;

static void sw_on_stop_signal(int signum)
{
    (void)signum;
    sw_stop_requested = 1;
}

/* No SA_RESTART: a sleep, poll or blocking receive must return early when we are
 * told to stop. */
static inline void sw_install_stop_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = sw_on_stop_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    /* If the runner dies (even by SIGKILL), stop like on SIGTERM instead of running on. */
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    if (getppid() == 1)
        sw_stop_requested = 1;
}

static inline int64_t sw_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static inline struct timespec sw_timespec(int64_t ns)
{
    struct timespec ts = {.tv_sec = (time_t)(ns / 1000000000LL),
                          .tv_nsec = (long)(ns % 1000000000LL)};
    return ts;
}

/* Sleep until the CLOCK_MONOTONIC time `at_ns`; returns nonzero if told to stop. */
static inline int sw_sleep_until(int64_t at_ns)
{
    struct timespec ts = sw_timespec(at_ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        if (sw_stop_requested)
            break;
    return sw_stop_requested;
}

/* A decimal integer in [lo, hi] that fills the whole string (every flag has lo >= 0). */
static inline int sw_parse_int(const char *s, int64_t lo, int64_t hi, int64_t *out)
{
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* A file is written to <path>.tmp.<pid> and renamed once complete, so a reader never
 * sees half of it. `what` ("" or a word and a space) goes before the name in errors. */
struct sw_file {
    FILE *f;
    const char *prog, *what, *path;
    char tmp[4096];
};

static inline int sw_file_open(struct sw_file *w, const char *prog, const char *what,
                               const char *path)
{
    w->prog = prog;
    w->what = what;
    w->path = path;
    w->f = NULL;
    if (snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof w->tmp)
        errno = ENAMETOOLONG;
    else
        w->f = fopen(w->tmp, "w");
    if (w->f == NULL) {
        fprintf(stderr, "%s: cannot write %s%s: %s\n", prog, what, w->tmp, strerror(errno));
        return -1;
    }
    return 0;
}

static inline int sw_file_commit(struct sw_file *w)
{
    int bad = ferror(w->f);
    if (fclose(w->f) != 0 || bad || rename(w->tmp, w->path) != 0) {
        fprintf(stderr, "%s: cannot write %s%s: %s\n", w->prog, w->what, w->path,
                strerror(errno));
        unlink(w->tmp);
        return -1;
    }
    return 0;
}

/* A whole small file (a ready flag, a stats line) in one printf. */
__attribute__((format(printf, 3, 4)))
static inline int sw_write_file(const char *prog, const char *path, const char *fmt, ...)
{
    struct sw_file w;
    if (sw_file_open(&w, prog, "", path) != 0)
        return -1;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(w.f, fmt, ap);
    va_end(ap);
    return sw_file_commit(&w);
}

/* The capture the probes on the target write (observer, gpio-watch) and jitterlab reads
 * (probes/logs.py): "JLOBS001", the counts of edges and of blind spans (u64), then each as two
 * int64; all little-endian, whatever the target's byte order. */
struct sw_rec {
    int64_t a, b; /* an edge: (t_ns, level); a blind span: (start_ns, end_ns) */
};

static inline void sw_put_u64_le(FILE *f, uint64_t v)
{
    unsigned char b[8];
    for (int i = 0; i < 8; i++)
        b[i] = (unsigned char)(v >> (8 * i));
    fwrite(b, 1, 8, f);
}

static inline void sw_put_recs_le(FILE *f, const struct sw_rec *r, uint64_t n)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    fwrite(r, sizeof *r, (size_t)n, f);
#else
    for (uint64_t i = 0; i < n; i++) {
        sw_put_u64_le(f, (uint64_t)r[i].a);
        sw_put_u64_le(f, (uint64_t)r[i].b);
    }
#endif
}

static inline int sw_write_capture(const char *prog, const char *path, const struct sw_rec *edges,
                                   uint64_t n_edges, const struct sw_rec *blind, uint64_t n_blind)
{
    struct sw_file w;
    if (sw_file_open(&w, prog, "capture ", path) != 0)
        return -1;
    setvbuf(w.f, NULL, _IOFBF, 1 << 20);
    fwrite("JLOBS001", 1, 8, w.f);
    sw_put_u64_le(w.f, n_edges);
    sw_put_u64_le(w.f, n_blind);
    sw_put_recs_le(w.f, edges, n_edges);
    sw_put_recs_le(w.f, blind, n_blind);
    return sw_file_commit(&w);
}

/* A zeroed buffer of len bytes whose pages are all present now, so the measured loop never takes
 * a page fault; NULL when it cannot be had. Anonymous memory with a hint for transparent huge
 * pages where the kernel has them: a 16 MB buffer then costs a few faults instead of thousands. */
static inline void *sw_alloc_prefaulted(size_t len)
{
    if (len == 0)
        len = 1;
    void *buf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return NULL;
#ifdef MADV_HUGEPAGE
    (void)madvise(buf, len, MADV_HUGEPAGE); /* a hint; refused on kernels without THP */
#endif
    long page = sysconf(_SC_PAGESIZE);
    volatile unsigned char *p = buf;
    for (size_t i = 0; i < len; i += (size_t)(page > 0 ? page : 4096))
        p[i] = 0;
    return buf;
}

/* A setup step failed: say which and why, exit 1. */
static inline void sw_die(const char *prog, const char *what, const char *path)
{
    fprintf(stderr, "%s: %s %s: %s\n", prog, what, path ? path : "", strerror(errno));
    exit(1);
}

/* Map `len` bytes of `path` from `offset` (any alignment); never truncate the file (an
 * observer may have it mapped). NULL (errno set) when mmap refuses; dies when open does. */
static inline volatile unsigned char *sw_map_or_null(const char *prog, const char *path,
                                                     uint64_t offset, size_t len, int writable)
{
    int fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_SYNC);
    if (fd < 0)
        sw_die(prog, "cannot open pin", path);
    long page = sysconf(_SC_PAGESIZE);
    uint64_t start = offset - offset % (uint64_t)(page > 0 ? page : 4096);
    size_t span = len + (size_t)(offset - start);
    void *p = mmap(NULL, span, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd,
                   (off_t)start);
    int saved = errno;
    close(fd);
    errno = saved;
    return p == MAP_FAILED ? NULL : (volatile unsigned char *)p + (offset - start);
}

static inline volatile unsigned char *sw_map(const char *prog, const char *path, uint64_t offset,
                                             size_t len, int writable)
{
    volatile unsigned char *p = sw_map_or_null(prog, path, offset, len, writable);
    if (p == NULL)
        sw_die(prog, "cannot mmap pin", path);
    return p;
}

/* Byte `offset` of the pin file ('0'/'1': a virtual pin, a virtual chip's level page). */
static inline volatile unsigned char *sw_map_pin(const char *prog, const char *path, int writable)
{
    return sw_map(prog, path, 0, 1, writable);
}

/* A memory-mapped GPIO block (--gpiomem): a line is set and cleared through 32-bit registers
 * (--write: set-clear writes its mask to set/clear registers, masked writes the mask or 0 to a
 * register that changes only the masked bits, rmw reads the data register and or's / and's the
 * mask); its direction is made output by a read-modify-write before the first edge. */
enum sw_write { SW_WRITE_SET_CLEAR, SW_WRITE_MASKED, SW_WRITE_RMW };

/* The program exits with this when the target refuses what it needs (sysexits EX_UNAVAILABLE). */
#define SW_EXIT_UNAVAILABLE 69

struct sw_regs {
    const char *device;
    uint64_t base, len, set_reg, clr_reg, mask, dir_reg, dir_clear, dir_set;
    int has_dir;
    enum sw_write write;
};

struct sw_args {
    const char *prog;
    int64_t period_ns;
    int64_t duration_ns;
    const char *pin;
    const char *log;
    int prio;
    int allow_no_rt;
    int mlock; /* --mlock: lock every page before the first edge (the mlock tuning) */
    struct sw_regs regs; /* regs.device != NULL: --gpiomem mode instead of --pin */
};

/* An unsigned number in decimal or 0x hex that fills the whole string. */
static inline int sw_parse_u64(const char *s, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (*s == '-')
        return -1;
    unsigned long long v = strtoull(s, &end, 0);
    if (errno != 0 || end == s || *end != '\0')
        return -1;
    *out = (uint64_t)v;
    return 0;
}

/* One --gpiomem flag into `r`; 0 if it was one, 1 if it is not a gpiomem flag, -1 if bad. */
static inline int sw_regs_flag(struct sw_regs *r, const char *flag, const char *val)
{
    static const char *const names[] = {"--map-base", "--map-len", "--set-reg", "--clr-reg",
                                        "--mask", "--dir-reg", "--dir-clear", "--dir-set"};
    uint64_t *fields[] = {&r->base, &r->len, &r->set_reg, &r->clr_reg,
                          &r->mask, &r->dir_reg, &r->dir_clear, &r->dir_set};
    if (strcmp(flag, "--gpiomem") == 0) {
        r->device = val;
        return 0;
    }
    if (strcmp(flag, "--write") == 0) {
        static const char *const writes[] = {"set-clear", "masked", "rmw"};
        for (size_t i = 0; i < sizeof writes / sizeof writes[0]; i++) {
            if (strcmp(val, writes[i]) == 0) {
                r->write = (enum sw_write)i;
                return 0;
            }
        }
        return -1;
    }
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (strcmp(flag, names[i]) == 0) {
            if (i >= 5)
                r->has_dir = 1;
            return sw_parse_u64(val, fields[i]) == 0 ? 0 : -1;
        }
    }
    return 1;
}

/* Where a program writes its level: a byte of a mapped file, or set/clear registers. */
struct sw_pin {
    volatile unsigned char *byte;
    volatile uint32_t *set, *clr;
    uint32_t mask;
    enum sw_write write;
};

static inline struct sw_pin sw_open_pin(const char *prog, const struct sw_args *a)
{
    struct sw_pin p = {0};
    if (a->regs.device == NULL) {
        p.byte = sw_map_pin(prog, a->pin, 1);
        return p;
    }
    const struct sw_regs *r = &a->regs;
    if (r->mask == 0 || r->mask > 0xffffffffu || r->len < 4 || r->set_reg % 4 || r->clr_reg % 4 ||
        r->dir_reg % 4 || r->set_reg + 4 > r->len || r->clr_reg + 4 > r->len ||
        r->dir_reg + 4 > r->len) {
        fprintf(stderr, "%s: bad --gpiomem register layout (offsets inside --map-len, 4-aligned, "
                        "one nonzero 32-bit --mask)\n", prog);
        exit(2);
    }
    volatile unsigned char *block = sw_map_or_null(prog, r->device, r->base, (size_t)r->len, 1);
    if (block == NULL && errno == EPERM) {
        /* STRICT_DEVMEM / IO_STRICT_DEVMEM kernels (Debian's) refuse a driver's registers */
        fprintf(stderr, "%s: cannot mmap %s at 0x%llx: %s; the kernel restricts /dev/mem "
                        "(STRICT_DEVMEM): boot it with iomem=relaxed on its command line\n",
                prog, r->device, (unsigned long long)r->base, strerror(EPERM));
        exit(SW_EXIT_UNAVAILABLE);
    }
    if (block == NULL)
        sw_die(prog, "cannot mmap pin", r->device);
    p.set = (volatile uint32_t *)(block + r->set_reg);
    p.clr = (volatile uint32_t *)(block + r->clr_reg);
    p.mask = (uint32_t)r->mask;
    p.write = r->write;
    if (r->has_dir) {
        volatile uint32_t *dir = (volatile uint32_t *)(block + r->dir_reg);
        *dir = (*dir & ~(uint32_t)r->dir_clear) | (uint32_t)r->dir_set;
    }
    return p;
}

static inline void sw_pin_set(const struct sw_pin *p, int level)
{
    if (p->byte != NULL)
        *p->byte = level ? '1' : '0';
    else if (p->write == SW_WRITE_RMW)
        *p->set = level ? (*p->set | p->mask) : (*p->set & ~p->mask);
    else if (p->write == SW_WRITE_MASKED)
        *(level ? p->set : p->clr) = level ? p->mask : 0;
    else if (level)
        *p->set = p->mask;
    else
        *p->clr = p->mask;
}

static inline void sw_usage_exit(const char *prog, const char *why)
{
    fprintf(stderr, "%s: %s\n" SW_USAGE, prog, why, prog);
    exit(2);
}

/* The flags every square-wave implementation accepts; exits 2 on bad input. */
static inline struct sw_args sw_parse_args(int argc, char **argv, const char *prog)
{
    struct sw_args a = {.prog = prog, .period_ns = -1, .duration_ns = -1, .prio = 80};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--allow-no-rt") == 0) {
            a.allow_no_rt = 1;
            continue;
        }
        if (strcmp(flag, "--mlock") == 0) {
            a.mlock = 1;
            continue;
        }
        if (i + 1 >= argc)
            sw_usage_exit(prog, "missing value or unknown flag");
        const char *val = argv[++i];
        int64_t n = 0;
        int regs = sw_regs_flag(&a.regs, flag, val);
        if (regs == 0)
            continue;
        if (regs < 0) {
            fprintf(stderr, "%s: bad value: %s %s\n" SW_USAGE, prog, flag, val, prog);
            exit(2);
        }
        if (strcmp(flag, "--pin") == 0) {
            a.pin = val;
        } else if (strcmp(flag, "--log") == 0) {
            a.log = val;
        } else if (strcmp(flag, "--period-ns") == 0 && sw_parse_int(val, 0, INT64_MAX, &n) == 0) {
            a.period_ns = n;
        } else if (strcmp(flag, "--duration-ns") == 0 && sw_parse_int(val, 0, INT64_MAX, &n) == 0) {
            a.duration_ns = n;
        } else if (strcmp(flag, "--prio") == 0 && sw_parse_int(val, 1, 99, &n) == 0) {
            a.prio = (int)n;
        } else {
            fprintf(stderr, "%s: bad flag or value: %s %s\n" SW_USAGE, prog, flag, val, prog);
            exit(2);
        }
    }
    if (a.period_ns < 2)
        sw_usage_exit(prog, "--period-ns is required and must be >= 2");
    if (a.duration_ns < 0)
        sw_usage_exit(prog, "--duration-ns is required");
    if ((a.pin == NULL) == (a.regs.device == NULL) || a.log == NULL)
        sw_usage_exit(prog, "--log and one of --pin or --gpiomem are required");
    return a;
}

/* Edges are stored as timestamps only: levels alternate 1,0,1,... by construction. */
struct sw_log {
    int64_t *t_ns;
    size_t cap;
    size_t n;
    uint64_t dropped;
};

static inline int sw_log_init(struct sw_log *log, const struct sw_args *a)
{
    uint64_t want = (uint64_t)(a->duration_ns / (a->period_ns / 2)) + 4;
    if (want > SW_MAX_LOGGED_EDGES)
        want = SW_MAX_LOGGED_EDGES;
    log->cap = (size_t)want;
    log->n = 0;
    log->dropped = 0;
    log->t_ns = sw_alloc_prefaulted(log->cap * sizeof *log->t_ns);
    return log->t_ns == NULL ? -1 : 0;
}

static inline void sw_log_add(struct sw_log *log, int64_t t_ns)
{
    if (log->n < log->cap)
        log->t_ns[log->n++] = t_ns;
    else
        log->dropped++;
}

static inline int sw_log_write(const struct sw_log *log, const char *path, const char *impl)
{
    struct sw_file w;
    if (sw_file_open(&w, impl, "log ", path) != 0)
        return -1;
    setvbuf(w.f, NULL, _IOFBF, 1 << 20);
    fprintf(w.f, "# jitterlab-edges v1 clock=monotonic impl=%s\n", impl);
    for (size_t i = 0; i < log->n; i++)
        fprintf(w.f, "%lld %d\n", (long long)log->t_ns[i], (i % 2 == 0) ? 1 : 0);
    if (log->dropped > 0)
        fprintf(w.f, "# dropped=%llu\n", (unsigned long long)log->dropped);
    fprintf(w.f, "# end edges=%zu\n", log->n);
    return sw_file_commit(&w);
}

enum sw_sleep_mode { SW_SLEEP_RELATIVE, SW_SLEEP_ABSOLUTE };

/* Sleep one half period: relative to now, or until *deadline (then advance it).
 * Returns nonzero if we were told to stop. */
static inline int sw_sleep_half(enum sw_sleep_mode mode, int64_t half_ns, int64_t *deadline)
{
    if (mode == SW_SLEEP_ABSOLUTE) {
        *deadline += half_ns;
        return sw_sleep_until(*deadline);
    }
    struct timespec req = sw_timespec(half_ns);
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &req, &req) == EINTR)
        if (sw_stop_requested)
            break;
    return sw_stop_requested;
}

/* --mlock: every page mapped now and later locked in memory (its buffers are prefaulted by
 * then), so the loop takes no page fault; a program that may not lock exits unavailable. */
static inline void sw_lock_if_asked(const struct sw_args *a)
{
    if (a->mlock && mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        fprintf(stderr, "%s: --mlock: mlockall: %s\n", a->prog, strerror(errno));
        exit(SW_EXIT_UNAVAILABLE);
    }
}

/* The square wave: first edge '1' now, toggle every half period until the
 * duration is over (or a stop signal), then leave the pin at '0'. Every edge
 * is timestamped right after its write completed. */
static inline void sw_run(const struct sw_args *a, struct sw_log *log,
                          void (*set_pin)(int level), enum sw_sleep_mode mode)
{
    sw_lock_if_asked(a);
    const int64_t half_ns = a->period_ns / 2;
    const int64_t start = sw_now_ns();
    int64_t deadline = start;
    int level = 1;
    int done = 0;
    for (;;) {
        set_pin(level);
        sw_log_add(log, sw_now_ns());
        if (done)
            return; /* that was the final falling edge */
        if (sw_sleep_half(mode, half_ns, &deadline))
            break;
        int64_t elapsed = (mode == SW_SLEEP_ABSOLUTE ? deadline : sw_now_ns()) - start;
        done = elapsed >= a->duration_ns;
        level ^= 1;
        if (done && level == 1)
            return; /* the pin is already at '0' */
    }
    if (level == 1) {
        set_pin(0);
        sw_log_add(log, sw_now_ns());
    }
}

#endif
