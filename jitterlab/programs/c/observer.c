/* observer: the vpin probe. A software logic analyzer that busy-polls the pin
 * byte, timestamps every level change with CLOCK_MONOTONIC, and records the
 * intervals in which it was not looking (blind), so nothing is silently lost. */
#include <sched.h>

#include "sw_common.h"

#define PROG "observer"
#define HIST_BUCKETS 131072 /* 1 ns buckets for poll intervals 0..131071 ns */
#define MAX_BLIND (1u << 20)

#define OBS_USAGE                                                                        \
    "usage: " PROG " --pin PATH --out PATH --stats PATH --ready PATH "                  \
    "[--blind-threshold-ns 5000] [--cpu N] [--prio 99] [--max-duration-ns N] "          \
    "[--max-edges N] [--pin-offset BYTE]\n"

struct opts {
    const char *pin, *out, *stats, *ready;
    int64_t blind_threshold_ns, cpu, prio, max_duration_ns, max_edges, pin_offset;
};

struct capture {
    struct sw_rec *edges, *blind;
    uint64_t *hist;
    uint64_t n_edges, n_blind, overflow_edges, blind_total, blind_dropped, blind_ns;
    uint64_t polls, hist_overflow;
    int64_t poll_max_ns, start_ns, end_ns;
    int initial_level, fifo, mlocked;
};

static void usage_exit(const char *why)
{
    fprintf(stderr, PROG ": %s\n" OBS_USAGE, why);
    exit(2);
}

static struct opts parse_opts(int argc, char **argv)
{
    struct opts o = {.blind_threshold_ns = 5000, .cpu = -1, .prio = 99,
                     .max_duration_ns = 0, .max_edges = 8 * 1024 * 1024};
    for (int i = 1; i < argc; i += 2) {
        const char *flag = argv[i], *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        int64_t n = -1;
        if (val == NULL)
            usage_exit("missing value or unknown flag");
        int num_ok = sw_parse_int(val, 0, INT64_MAX, &n) == 0;
        if (strcmp(flag, "--pin") == 0)
            o.pin = val;
        else if (strcmp(flag, "--out") == 0)
            o.out = val;
        else if (strcmp(flag, "--stats") == 0)
            o.stats = val;
        else if (strcmp(flag, "--ready") == 0)
            o.ready = val;
        else if (strcmp(flag, "--blind-threshold-ns") == 0 && num_ok && n > 0)
            o.blind_threshold_ns = n;
        else if (strcmp(flag, "--cpu") == 0 && num_ok && n < CPU_SETSIZE)
            o.cpu = n;
        else if (strcmp(flag, "--prio") == 0 && num_ok && n >= 1 && n <= 99)
            o.prio = n;
        else if (strcmp(flag, "--max-duration-ns") == 0 && num_ok)
            o.max_duration_ns = n;
        else if (strcmp(flag, "--max-edges") == 0 && num_ok && n > 0 && n <= (1LL << 32))
            o.max_edges = n;
        else if (strcmp(flag, "--pin-offset") == 0 && num_ok)
            o.pin_offset = n;
        else {
            fprintf(stderr, PROG ": bad flag or value: %s %s\n" OBS_USAGE, flag, val);
            exit(2);
        }
    }
    if (!o.pin || !o.out || !o.stats || !o.ready)
        usage_exit("--pin, --out, --stats and --ready are required");
    return o;
}

static void *alloc_prefaulted(size_t len, const char *what)
{
    void *p = sw_alloc_prefaulted(len);
    if (p == NULL)
        sw_die(PROG, "cannot allocate", what);
    return p;
}

/* Smallest bucket whose cumulative count reaches q of all polls; past the
 * histogram the answer is the max gap, an upper bound. */
static int64_t poll_percentile(const struct capture *c, double q)
{
    if (c->polls == 0)
        return 0;
    uint64_t rank = (uint64_t)(q * (double)c->polls);
    if (rank == 0)
        rank = 1;
    uint64_t seen = 0;
    for (int64_t ns = 0; ns < HIST_BUCKETS; ns++) {
        seen += c->hist[ns];
        if (seen >= rank)
            return ns;
    }
    return c->poll_max_ns;
}

static int write_stats(const struct opts *o, const struct capture *c)
{
    return sw_write_file(PROG, o->stats,
                         "{\"polls\": %llu, \"poll_ns_p50\": %lld, \"poll_ns_p999\": %lld, "
                         "\"poll_ns_max\": %lld, \"poll_ns_hist_overflow\": %llu, "
                         "\"blind_intervals\": %llu, \"blind_ns\": %llu, \"blind_dropped\": %llu, "
                         "\"edges\": %llu, \"overflow_edges\": %llu, \"max_edges\": %lld, "
                         "\"sched\": \"%s\", \"prio\": %lld, \"cpu\": %lld, \"mlock\": %s, "
                         "\"initial_level\": %d, \"start_ns\": %lld, \"end_ns\": %lld, "
                         "\"blind_threshold_ns\": %lld}\n",
                         (unsigned long long)c->polls, (long long)poll_percentile(c, 0.5),
                         (long long)poll_percentile(c, 0.999), (long long)c->poll_max_ns,
                         (unsigned long long)c->hist_overflow, (unsigned long long)c->blind_total,
                         (unsigned long long)c->blind_ns, (unsigned long long)c->blind_dropped,
                         (unsigned long long)c->n_edges, (unsigned long long)c->overflow_edges,
                         (long long)o->max_edges, c->fifo ? "fifo" : "other",
                         (long long)(c->fifo ? o->prio : 0), (long long)o->cpu,
                         c->mlocked ? "true" : "false", c->initial_level, (long long)c->start_ns,
                         (long long)c->end_ns, (long long)o->blind_threshold_ns);
}

static void signal_ready(const char *path)
{
    if (sw_write_file(PROG, path, "%ld\n", (long)getpid()) != 0)
        exit(1);
}

/* A span [s, e] in which the pin was not looked at; one that starts where the last one ended
 * (a stall, then the signal handler's work) extends it, so a span's length is the whole time the
 * observer was away. */
static void add_blind(struct capture *c, int64_t s, int64_t e)
{
    c->blind_ns += (uint64_t)(e - s);
    if (c->n_blind > 0 && c->blind[c->n_blind - 1].b == s) {
        c->blind[c->n_blind - 1].b = e;
        return;
    }
    c->blind_total++;
    if (c->n_blind < MAX_BLIND)
        c->blind[c->n_blind++] = (struct sw_rec){s, e};
    else
        c->blind_dropped++;
}

/* The hot loop: read, timestamp, account the gap, note a level change. */
static void poll_loop(const struct opts *o, volatile const unsigned char *pin, struct capture *c)
{
    const int64_t thr = o->blind_threshold_ns;
    const uint64_t max_edges = (uint64_t)o->max_edges;
    int level = c->initial_level;
    int64_t prev = sw_now_ns();
    const int64_t deadline = o->max_duration_ns > 0 ? prev + o->max_duration_ns : INT64_MAX;
    c->start_ns = prev;
    for (;;) {
        /* The stop flag is read before the pin, so the last look at the pin comes after the stop
         * was asked: an edge made while this process was not running is still recorded. */
        const int stopping = sw_stop_requested;
        int v = (*pin == '1');
        int64_t t = sw_now_ns();
        int64_t gap = t - prev;
        c->polls++;
        if (gap < HIST_BUCKETS)
            c->hist[gap]++;
        else
            c->hist_overflow++;
        if (gap > c->poll_max_ns)
            c->poll_max_ns = gap;
        if (gap > thr)
            add_blind(c, prev, t);
        if (v != level) {
            /* The pin was last read during the previous iteration, before that iteration's
             * timestamp: when that gap was blind, the edge may lie anywhere in it, so the span is
             * stretched to this stamp (the analysis then knows the stamp may be late). */
            if (gap <= thr && c->n_blind > 0 && c->blind[c->n_blind - 1].b == prev)
                add_blind(c, prev, t);
            level = v;
            if (c->n_edges < max_edges)
                c->edges[c->n_edges++] = (struct sw_rec){t, v};
            else
                c->overflow_edges++;
        }
        prev = t;
        if (stopping || t >= deadline)
            break;
    }
    c->end_ns = prev;
}

int main(int argc, char **argv)
{
    struct opts o = parse_opts(argc, argv);
    struct capture c = {0};
    volatile const unsigned char *pin = sw_map(PROG, o.pin, (uint64_t)o.pin_offset, 1, 0);

    if (o.cpu >= 0) {
        cpu_set_t set;
        CPU_ZERO(&set);
        CPU_SET((int)o.cpu, &set);
        if (sched_setaffinity(0, sizeof set, &set) != 0) {
            fprintf(stderr, PROG ": cannot pin to --cpu %lld: %s\n", (long long)o.cpu,
                    strerror(errno));
            return 1;
        }
    }
    /* Allocated and touched before mlockall so MCL_FUTURE cannot refuse them. */
    c.edges = alloc_prefaulted((size_t)o.max_edges * sizeof *c.edges, "edge buffer");
    c.blind = alloc_prefaulted(MAX_BLIND * sizeof *c.blind, "blind buffer");
    c.hist = alloc_prefaulted(HIST_BUCKETS * sizeof *c.hist, "histogram");

    c.mlocked = mlockall(MCL_CURRENT | MCL_FUTURE) == 0;
    struct sched_param sp = {.sched_priority = (int)o.prio};
    c.fifo = sched_setscheduler(0, SCHED_FIFO, &sp) == 0;

    sw_install_stop_handlers();
    c.initial_level = (*pin == '1');
    signal_ready(o.ready);
    poll_loop(&o, pin, &c);

    if (c.mlocked)
        munlockall(); /* the capture is over; writing may allocate */
    int rc = 0;
    if (sw_write_capture(PROG, o.out, c.edges, c.n_edges, c.blind, c.n_blind) != 0)
        rc = 1;
    if (write_stats(&o, &c) != 0)
        rc = 1;
    return rc;
}
