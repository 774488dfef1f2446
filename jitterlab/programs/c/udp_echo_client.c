/* udp-echo-client: sends one UDP message every --interval-ns to an echo server
 * and times each round trip with CLOCK_MONOTONIC (send -> matching reply).
 * A reply that does not come within --timeout-ns counts as lost; if it comes
 * later it also counts as late. Messages sent during --warmup-ns are not
 * recorded. It stops after --count recorded messages, or when --duration-ns
 * has passed after the warm-up if --count is 0, and writes:
 *   # jitterlab-udp-echo v1 clock=monotonic size=.. interval_ns=.. timeout_ns=.. policy=..
 *   <rtt_ns>            one line per reply, in send order
 *   # end sent=N received=N lost=N late=N
 */
#include <poll.h>

#include "udp_common.h"

#define PROG "udp-echo-client"
#define USAGE                                                                                \
    "usage: " PROG " --host ADDR --port N --out PATH [--size BYTES] [--interval-ns N] "      \
    "[--count N] [--duration-ns N] [--warmup-ns N] [--timeout-ns N] " UDP_SCHED_USAGE "\n"
#define MIN_SIZE 16 /* sequence number + session token */
#define MAX_SIZE 65507
#define MAX_SAMPLES (16LL * 1024 * 1024)
#define MIN_RTT_NS 2000LL /* sizing the buffer of a back-to-back run: no RTT is shorter */

struct client_args {
    const char *host, *out;
    int64_t port, size, interval_ns, count, duration_ns, warmup_ns, timeout_ns;
};

static struct client_args parse_args(int argc, char **argv, struct udp_sched *sched)
{
    struct client_args a = {.port = -1, .size = 64, .interval_ns = 1000000, .count = 0,
                            .duration_ns = -1, .warmup_ns = 0, .timeout_ns = 100000000};
    const struct udp_flag flags[] = {
        {"--host", &a.host, NULL, 0, 0},
        {"--out", &a.out, NULL, 0, 0},
        {"--port", NULL, &a.port, 1, 65535},
        {"--size", NULL, &a.size, MIN_SIZE, MAX_SIZE},
        {"--interval-ns", NULL, &a.interval_ns, 0, 3600LL * 1000000000LL},
        {"--count", NULL, &a.count, 0, MAX_SAMPLES},
        {"--duration-ns", NULL, &a.duration_ns, 1, INT64_MAX / 4},
        {"--warmup-ns", NULL, &a.warmup_ns, 0, INT64_MAX / 4},
        {"--timeout-ns", NULL, &a.timeout_ns, 1000, 60LL * 1000000000LL},
        {NULL},
    };
    udp_parse_flags(PROG, USAGE, argc, argv, flags, sched);
    if (a.host == NULL || a.port < 0 || a.out == NULL)
        udp_usage_error(PROG, "--host, --port and --out are required");
    if (a.count == 0 && a.duration_ns < 0)
        udp_usage_error(PROG, "give --count or --duration-ns");
    udp_check_sched(PROG, sched);
    return a;
}

/* Wait for the reply to message `seq` until `deadline_ns`; its arrival time, or -1 (lost).
 * Older replies that turn up now are late: counted if they belong to recorded messages. */
static int64_t await_reply(int fd, unsigned char *buf, size_t size, uint64_t token, uint64_t seq,
                           uint64_t first_recorded, int64_t deadline_ns, unsigned long long *late)
{
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    for (;;) {
        int64_t left = deadline_ns - sw_now_ns();
        if (left <= 0 || sw_stop_requested)
            return -1;
        struct timespec ts = sw_timespec(left);
        int ready = ppoll(&pfd, 1, &ts, NULL);
        if (ready <= 0)
            continue; /* timeout, EINTR: re-check the deadline and the stop flag */
        ssize_t n = recv(fd, buf, size, MSG_DONTWAIT);
        int64_t t = sw_now_ns();
        if (n < (ssize_t)MIN_SIZE)
            continue; /* ECONNREFUSED (no server yet), EAGAIN, or a runt: keep waiting */
        uint64_t got_seq, got_token;
        memcpy(&got_seq, buf, 8);
        memcpy(&got_token, buf + 8, 8);
        if (got_token != token)
            continue;
        if (got_seq == seq)
            return t;
        if (got_seq < seq && got_seq >= first_recorded)
            (*late)++;
    }
}

static int write_out(const struct client_args *a, const char *policy, const int64_t *rtt,
                     size_t n, unsigned long long sent, unsigned long long lost,
                     unsigned long long late)
{
    struct sw_file w;
    if (sw_file_open(&w, PROG, "", a->out) != 0)
        return -1;
    setvbuf(w.f, NULL, _IOFBF, 1 << 20);
    fprintf(w.f, "# jitterlab-udp-echo v1 clock=monotonic size=%lld interval_ns=%lld "
                 "timeout_ns=%lld policy=%s\n", (long long)a->size, (long long)a->interval_ns,
            (long long)a->timeout_ns, policy);
    for (size_t i = 0; i < n; i++)
        fprintf(w.f, "%lld\n", (long long)rtt[i]);
    fprintf(w.f, "# end sent=%llu received=%zu lost=%llu late=%llu\n", sent, n, lost, late);
    return sw_file_commit(&w);
}

int main(int argc, char **argv)
{
    struct udp_sched sched = {.policy = UDP_OTHER, .prio = 80};
    struct client_args a = parse_args(argc, argv, &sched);
    struct sockaddr_storage addr;
    socklen_t addr_len = udp_address(PROG, "--host", a.host, a.port, &addr);

    int64_t cap = a.count;
    if (cap == 0) {
        int64_t step = a.interval_ns > MIN_RTT_NS ? a.interval_ns : MIN_RTT_NS;
        cap = a.duration_ns / step + 16;
    }
    if (cap > MAX_SAMPLES)
        cap = MAX_SAMPLES;
    int64_t *rtt = malloc((size_t)cap * sizeof *rtt);
    unsigned char *buf = malloc((size_t)a.size), *reply = malloc(MAX_SIZE + 1);
    if (rtt == NULL || buf == NULL || reply == NULL)
        udp_die(PROG, "cannot allocate the sample buffer");
    memset(rtt, 0, (size_t)cap * sizeof *rtt); /* prefault: no page fault while measuring */
    memset(buf, 0xa5, (size_t)a.size);

    sw_install_stop_handlers();
    int fd = udp_connected_socket(PROG, &addr, addr_len);
    udp_apply_sched(PROG, &sched);

    uint64_t token = ((uint64_t)getpid() << 32) ^ (uint64_t)sw_now_ns();
    const int64_t start = sw_now_ns();
    const int64_t measure_from = start + a.warmup_ns;
    int64_t next = start;
    size_t n = 0;
    unsigned long long sent = 0, lost = 0, late = 0, send_errors = 0;
    uint64_t first_recorded = UINT64_MAX;
    int full = 0;
    for (uint64_t seq = 0; !sw_stop_requested; seq++) {
        if (a.interval_ns > 0) {
            if (sw_sleep_until(next))
                break;
            next += a.interval_ns;
            int64_t now = sw_now_ns();
            if (next < now)
                next = now; /* fell behind: go on at the interval, never in a burst */
        }
        int64_t t0 = sw_now_ns();
        int recorded = t0 >= measure_from;
        if (recorded) {
            if ((a.count > 0 && (int64_t)sent >= a.count) ||
                (a.count == 0 && t0 - measure_from >= a.duration_ns))
                break;
            if ((int64_t)n >= cap) {
                full = 1;
                break;
            }
            if (first_recorded == UINT64_MAX)
                first_recorded = seq;
        }
        memcpy(buf, &seq, 8);
        memcpy(buf + 8, &token, 8);
        t0 = sw_now_ns();
        if (send(fd, buf, (size_t)a.size, 0) != (ssize_t)a.size) {
            send_errors++;
            if (recorded) {
                sent++;
                lost++;
            }
            continue;
        }
        int64_t t1 = await_reply(fd, reply, MAX_SIZE + 1, token, seq, first_recorded,
                                 t0 + a.timeout_ns, &late);
        if (!recorded)
            continue;
        if (sw_stop_requested && t1 < 0)
            break; /* told to stop while waiting: this message is neither received nor lost */
        sent++;
        if (t1 < 0)
            lost++;
        else
            rtt[n++] = t1 - t0;
    }
    if (full)
        printf("warning: the sample buffer was full after %zu replies; the run ended early\n", n);
    if (send_errors)
        printf("warning: %llu sends failed\n", send_errors);
    fflush(stdout);
    close(fd);
    const char *policy = udp_policy_flag_value(sched.policy);
    return write_out(&a, policy, rtt, n, sent, lost, late) == 0 ? 0 : 1;
}
