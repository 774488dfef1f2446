/* gpio-watch: the gpio-loopback probe. Requests a line of a GPIO character device as an input
 * with edge events (v2 uAPI, no library), and writes every level change the kernel timestamped,
 * plus the spans in which it may have missed edges, in the observer's capture format.
 *
 * The kernel stamps each edge in its interrupt path (CLOCK_MONOTONIC by default, REALTIME or a
 * hardware timestamp engine on request), independent of the program's own clock reads. A gap in
 * the event sequence numbers (the kernel's event buffer overflowed) or two edges of the same
 * polarity in a row (the opposite one was lost) is a blind span: the analysis excludes the
 * periods it may have falsified. */
#include <linux/gpio.h>
#include <poll.h>
#include <sys/ioctl.h>

#include "sw_common.h"

#define PROG "gpio-watch"
#define USAGE                                                                                \
    "usage: " PROG " --chip /dev/gpiochipN --line N --out PATH --stats PATH --ready PATH "  \
    "[--max-duration-ns N] [--max-edges N] [--clock monotonic|realtime|hte]\n"

struct opts {
    const char *chip, *out, *stats, *ready, *clock;
    int64_t line, max_duration_ns, max_edges;
};

static void usage_exit(const char *why)
{
    fprintf(stderr, PROG ": %s\n" USAGE, why);
    exit(2);
}

static struct opts parse_opts(int argc, char **argv)
{
    struct opts o = {.line = -1, .max_edges = 1 << 20, .clock = "monotonic"};
    for (int i = 1; i < argc; i += 2) {
        const char *flag = argv[i], *val = (i + 1 < argc) ? argv[i + 1] : NULL;
        int64_t n = -1;
        if (val == NULL)
            usage_exit("missing value or unknown flag");
        int num_ok = sw_parse_int(val, 0, INT64_MAX, &n) == 0;
        if (strcmp(flag, "--chip") == 0)
            o.chip = val;
        else if (strcmp(flag, "--line") == 0 && num_ok && n <= 65535)
            o.line = n;
        else if (strcmp(flag, "--out") == 0)
            o.out = val;
        else if (strcmp(flag, "--stats") == 0)
            o.stats = val;
        else if (strcmp(flag, "--ready") == 0)
            o.ready = val;
        else if (strcmp(flag, "--max-duration-ns") == 0 && num_ok)
            o.max_duration_ns = n;
        else if (strcmp(flag, "--max-edges") == 0 && num_ok && n > 0 && n <= (1LL << 28))
            o.max_edges = n;
        else if (strcmp(flag, "--clock") == 0 && (strcmp(val, "monotonic") == 0 ||
                                                   strcmp(val, "realtime") == 0 ||
                                                   strcmp(val, "hte") == 0))
            o.clock = val;
        else {
            fprintf(stderr, PROG ": bad flag or value: %s %s\n" USAGE, flag, val);
            exit(2);
        }
    }
    if (!o.chip || o.line < 0 || !o.out || !o.stats || !o.ready)
        usage_exit("--chip, --line, --out, --stats and --ready are required");
    return o;
}

struct capture {
    struct sw_rec *edges, *blind;
    uint64_t n_edges, n_blind, max_blind, overflow, events, lost_events, same_polarity;
    int initial_level;
    int64_t start_ns, end_ns;
};

static void add_blind(struct capture *c, int64_t from, int64_t to)
{
    if (c->n_blind < c->max_blind)
        c->blind[c->n_blind++] = (struct sw_rec){from, to};
}

static int request_line(const struct opts *o, int chip_fd)
{
    struct gpio_v2_line_request req;
    memset(&req, 0, sizeof req);
    req.offsets[0] = (__u32)o->line;
    req.num_lines = 1;
    req.event_buffer_size = 1024;
    req.config.flags = GPIO_V2_LINE_FLAG_INPUT | GPIO_V2_LINE_FLAG_EDGE_RISING |
                       GPIO_V2_LINE_FLAG_EDGE_FALLING;
    if (strcmp(o->clock, "realtime") == 0)
        req.config.flags |= GPIO_V2_LINE_FLAG_EVENT_CLOCK_REALTIME;
    else if (strcmp(o->clock, "hte") == 0)
        req.config.flags |= GPIO_V2_LINE_FLAG_EVENT_CLOCK_HTE;
    snprintf(req.consumer, sizeof req.consumer, "jitterlab-watch");
    if (ioctl(chip_fd, GPIO_V2_GET_LINE_IOCTL, &req) != 0) {
        fprintf(stderr, PROG ": cannot request line %lld of %s as an input with edge events: %s\n",
                (long long)o->line, o->chip, strerror(errno));
        exit(errno == EBUSY ? 4 : 1);
    }
    return req.fd;
}

static int read_level(int line_fd)
{
    struct gpio_v2_line_values v = {.mask = 1};
    if (ioctl(line_fd, GPIO_V2_LINE_GET_VALUES_IOCTL, &v) != 0)
        sw_die(PROG, "cannot read the line's level", NULL);
    return (int)(v.bits & 1);
}

static void watch(const struct opts *o, int line_fd, struct capture *c)
{
    struct gpio_v2_line_event ev[64];
    struct pollfd pfd = {.fd = line_fd, .events = POLLIN};
    int level = c->initial_level;
    int64_t last = c->start_ns;
    uint32_t next_seqno = 0;
    const int64_t deadline = o->max_duration_ns > 0 ? c->start_ns + o->max_duration_ns : INT64_MAX;
    for (;;) {
        /* Once stopping, the events the kernel still holds are read without waiting, then the
         * watch ends: an edge made just before the stop is not left in the queue. */
        const int stopping = sw_stop_requested || sw_now_ns() >= deadline;
        ssize_t got = poll(&pfd, 1, stopping ? 0 : 50) > 0 ? read(line_fd, ev, sizeof ev) : 0;
        if (got < (ssize_t)sizeof ev[0]) {
            if (stopping)
                break;
            continue;
        }
        for (size_t i = 0; i < (size_t)got / sizeof ev[0]; i++) {
            int64_t t = (int64_t)ev[i].timestamp_ns;
            int v = ev[i].id == GPIO_V2_LINE_EVENT_RISING_EDGE;
            c->events++;
            if (next_seqno != 0 && ev[i].line_seqno != next_seqno) {
                c->lost_events += ev[i].line_seqno - next_seqno;
                add_blind(c, last, t);
            }
            next_seqno = ev[i].line_seqno + 1;
            if (v == level) { /* the opposite edge between `last` and now was lost */
                c->same_polarity++;
                add_blind(c, last, t);
            } else if (c->n_edges < (uint64_t)o->max_edges) {
                c->edges[c->n_edges++] = (struct sw_rec){t, v};
                level = v;
            } else {
                c->overflow++;
                level = v;
            }
            last = t;
        }
    }
    c->end_ns = sw_now_ns();
}

int main(int argc, char **argv)
{
    struct opts o = parse_opts(argc, argv);
    struct capture c = {.max_blind = 1 << 16};
    c.edges = calloc((size_t)o.max_edges, sizeof *c.edges);
    c.blind = calloc((size_t)c.max_blind, sizeof *c.blind);
    if (!c.edges || !c.blind)
        sw_die(PROG, "cannot allocate the capture", NULL);
    int chip_fd = open(o.chip, O_RDWR | O_CLOEXEC);
    if (chip_fd < 0)
        sw_die(PROG, "cannot open the GPIO chip", o.chip);
    int line_fd = request_line(&o, chip_fd);
    sw_install_stop_handlers();
    c.initial_level = read_level(line_fd);
    c.start_ns = sw_now_ns();
    if (sw_write_file(PROG, o.ready, "%ld\n", (long)getpid()) != 0)
        return 1;
    watch(&o, line_fd, &c);
    int rc = sw_write_capture(PROG, o.out, c.edges, c.n_edges, c.blind, c.n_blind) == 0 ? 0 : 1;
    if (sw_write_file(PROG, o.stats,
                      "{\"events\": %llu, \"edges\": %llu, \"lost_events\": %llu, "
                      "\"same_polarity\": %llu, \"overflow_edges\": %llu, \"blind_intervals\": %llu, "
                      "\"initial_level\": %d, \"clock\": \"%s\", \"start_ns\": %lld, \"end_ns\": %lld}\n",
                      (unsigned long long)c.events, (unsigned long long)c.n_edges,
                      (unsigned long long)c.lost_events, (unsigned long long)c.same_polarity,
                      (unsigned long long)c.overflow, (unsigned long long)c.n_blind, c.initial_level,
                      o.clock, (long long)c.start_ns, (long long)c.end_ns) != 0)
        rc = 1;
    return rc;
}
