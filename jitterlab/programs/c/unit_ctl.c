/* unit-ctl: Linux's side of the unit impl. It commands a real-time unit beside Linux over its tty
 * (a serial line, an RPMsg tty, an emulated unit's pty): it syncs with `ping`, sets the period,
 * starts the wave the unit makes from its own timer, waits the run's duration (exchanging a message
 * with the unit every --chatter-ns and timing each round trip on CLOCK_MONOTONIC), stops the wave
 * (which ends at its next half-period boundary, up to half a period later) and writes the unit's
 * count of its edges as the edge log: "# jitterlab-edges v1 clock=none", no
 * timestamps (the unit counts its edges, it does not timestamp them), "# dropped=<edges>".
 * The protocol is the firmware's (jitterlab/programs/unit/core.h).
 *
 * Flags: --period-ns N --duration-ns N --tty PATH --baud N --log PATH [--chatter-ns N --chatter PATH]
 * [--sync-timeout-ns N] [--prio N] [--allow-no-rt] (the last two are every impl's: the wave does
 * not depend on this program's scheduling, so it runs as it is started). */
#include <poll.h>
#include <termios.h>

#include "sw_common.h"

#define PROG "unit-ctl"
#define REPLY_NS (5LL * 1000000000LL)   /* an emulated unit on a busy machine answers late */
#define PING_NS (250LL * 1000000LL)
#define LEFTOVER_NS (120LL * 1000000000LL)
#define MAX_CHATTER (1u << 20)

static int fd = -1;
static const char *tty_path;
static char inbuf[4096];
static size_t inlen;

__attribute__((format(printf, 1, 2), noreturn))
static void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, PROG ": ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

static speed_t speed_of(int64_t baud)
{
    static const struct { int64_t baud; speed_t speed; } table[] = {
        {9600, B9600}, {19200, B19200}, {38400, B38400}, {57600, B57600}, {115200, B115200},
        {230400, B230400}, {460800, B460800}, {921600, B921600}};
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (table[i].baud == baud)
            return table[i].speed;
    return 0;
}

/* Raw, 8N1, no modem control, no echo; reads return at once (poll() waits). */
static void open_tty(int64_t baud)
{
    fd = open(tty_path, O_RDWR | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        fail("cannot open the unit's tty %s: %s (check unit.tty of the target)", tty_path, strerror(errno));
    struct termios t;
    if (tcgetattr(fd, &t) != 0)
        fail("%s is not a tty: %s", tty_path, strerror(errno));
    cfmakeraw(&t);
    t.c_cflag |= CLOCAL | CREAD;
    t.c_cc[VMIN] = 0;
    t.c_cc[VTIME] = 0;
    cfsetispeed(&t, speed_of(baud));
    cfsetospeed(&t, speed_of(baud));
    if (tcsetattr(fd, TCSANOW, &t) != 0)
        fail("cannot set %s raw: %s", tty_path, strerror(errno));
    tcflush(fd, TCIOFLUSH);
}

/* A whole line out; an RPMsg tty refuses a write it has no buffer for (ENOMEM) rather than block. */
static void send_line(const char *text)
{
    char line[256];
    int n = snprintf(line, sizeof line, "%s\n", text);
    int64_t give_up = sw_now_ns() + REPLY_NS;
    for (int done = 0; done < n;) {
        ssize_t w = write(fd, line + done, (size_t)(n - done));
        if (w > 0) {
            done += (int)w;
        } else if (w < 0 && errno != EAGAIN && errno != ENOMEM && errno != EINTR) {
            fail("writing to %s failed: %s", tty_path, strerror(errno));
        } else if (sw_now_ns() > give_up || sw_stop_requested) {
            fail("%s takes no more bytes: the unit does not read them", tty_path);
        } else {
            struct timespec pause = {0, 1000000};
            nanosleep(&pause, NULL);
        }
    }
}

/* The next line the unit sent (without its '\n'), or NULL when none came by `deadline_ns`. */
static const char *read_line(int64_t deadline_ns, char *out, size_t cap)
{
    for (;;) {
        char *nl = memchr(inbuf, '\n', inlen);
        if (nl != NULL) {
            size_t len = (size_t)(nl - inbuf);
            size_t keep = len < cap ? len : cap - 1;
            memcpy(out, inbuf, keep);
            out[keep] = '\0';
            if (keep > 0 && out[keep - 1] == '\r')
                out[keep - 1] = '\0';
            memmove(inbuf, nl + 1, inlen - len - 1);
            inlen -= len + 1;
            return out;
        }
        if (inlen == sizeof inbuf)
            inlen = 0; /* a line longer than any reply: garbage, dropped */
        int64_t left = deadline_ns - sw_now_ns();
        if (left <= 0 || sw_stop_requested)
            return NULL;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int ready = poll(&p, 1, (int)(left / 1000000 + 1));
        if (ready > 0) {
            ssize_t r = read(fd, inbuf + inlen, sizeof inbuf - inlen);
            if (r > 0)
                inlen += (size_t)r;
            else if (r < 0 && errno != EAGAIN && errno != EINTR)
                fail("reading %s failed: %s", tty_path, strerror(errno));
        }
    }
}

/* Send `cmd` and return the first reply that starts with `want` (or with "ERR"); lines left over
 * from earlier exchanges are passed over. NULL when none came within `wait_ns`. */
static const char *ask(const char *cmd, const char *want, char *reply, size_t cap, int64_t wait_ns)
{
    send_line(cmd);
    int64_t deadline = sw_now_ns() + wait_ns;
    const char *line;
    while ((line = read_line(deadline, reply, cap)) != NULL)
        if (strncmp(line, want, strlen(want)) == 0 || strncmp(line, "ERR", 3) == 0)
            return line;
    return NULL;
}

static void must(const char *cmd, const char *want, char *reply, size_t cap, int64_t wait_ns)
{
    const char *got = ask(cmd, want, reply, cap, wait_ns);
    if (got == NULL)
        fail("the unit on %s did not answer '%s' (it answered ping before)", tty_path, cmd);
    if (strncmp(got, want, strlen(want)) != 0)
        fail("the unit refused '%s': %s", cmd, got);
}

/* `ping` until the unit answers, then an echo only this exchange can have asked for, so that no
 * late answer to an earlier ping is taken for a later reply. */
static void sync_unit(int64_t timeout_ns)
{
    char reply[256], token[64];
    int64_t give_up = sw_now_ns() + timeout_ns;
    int synced = 0;
    while (!synced && sw_now_ns() < give_up && !sw_stop_requested) {
        send_line("\nping"); /* the newline ends whatever partial line the unit has */
        const char *line;
        int64_t deadline = sw_now_ns() + PING_NS;
        while (!synced && (line = read_line(deadline, reply, sizeof reply)) != NULL)
            synced = strcmp(line, "pong") == 0;
    }
    if (!synced) {
        char secs[32];
        snprintf(secs, sizeof secs, "%.3g", (double)timeout_ns / 1e9);
        fail("the unit on %s never answered ping within %s s: is its firmware running, and is this its "
             "line?", tty_path, secs);
    }
    snprintf(token, sizeof token, "C sync %ld", (long)getpid());
    must(token, token, reply, sizeof reply, REPLY_NS);
}

int main(int argc, char **argv)
{
    int64_t period_ns = -1, duration_ns = -1, baud = 115200, chatter_ns = 0, n = 0;
    int64_t sync_ns = 5LL * 1000000000LL;
    const char *log = NULL, *chatter_path = NULL;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--allow-no-rt") == 0)
            continue;
        if (i + 1 >= argc)
            sw_usage_exit(PROG, "missing value or unknown flag");
        const char *val = argv[++i];
        if (strcmp(flag, "--tty") == 0)
            tty_path = val;
        else if (strcmp(flag, "--log") == 0)
            log = val;
        else if (strcmp(flag, "--chatter") == 0)
            chatter_path = val;
        else if (strcmp(flag, "--period-ns") == 0 && sw_parse_int(val, 2, INT64_MAX, &n) == 0)
            period_ns = n;
        else if (strcmp(flag, "--duration-ns") == 0 && sw_parse_int(val, 0, INT64_MAX, &n) == 0)
            duration_ns = n;
        else if (strcmp(flag, "--baud") == 0 && sw_parse_int(val, 1, INT64_MAX, &n) == 0 && speed_of(n))
            baud = n;
        else if (strcmp(flag, "--chatter-ns") == 0 && sw_parse_int(val, 0, INT64_MAX, &n) == 0)
            chatter_ns = n;
        else if (strcmp(flag, "--sync-timeout-ns") == 0 && sw_parse_int(val, 1, INT64_MAX, &n) == 0)
            sync_ns = n;
        else if (strcmp(flag, "--prio") == 0 && sw_parse_int(val, 1, 99, &n) == 0)
            continue;
        else
            sw_usage_exit(PROG, "bad flag or value");
    }
    if (period_ns < 0 || duration_ns < 0 || tty_path == NULL || log == NULL)
        sw_usage_exit(PROG, "--period-ns, --duration-ns, --tty and --log are required");
    if (chatter_ns > 0 && chatter_path == NULL)
        sw_usage_exit(PROG, "--chatter-ns needs --chatter PATH");
    size_t cap = chatter_ns > 0 ? (size_t)(duration_ns / chatter_ns) + 2 : 1;
    int64_t *rtt = sw_alloc_prefaulted((cap < MAX_CHATTER ? cap : MAX_CHATTER) * sizeof *rtt);
    if (rtt == NULL)
        sw_die(PROG, "cannot allocate the round trips", NULL);
    sw_install_stop_handlers();
    open_tty(baud);
    sync_unit(sync_ns);

    char reply[256], cmd[64];
    /* a wave a killed run left going ends at its next half-period boundary, of a period unknown */
    must("stop", "OK stop", reply, sizeof reply, LEFTOVER_NS);
    snprintf(cmd, sizeof cmd, "P %lld", (long long)period_ns);
    must(cmd, "OK P", reply, sizeof reply, REPLY_NS);
    must("start", "OK start", reply, sizeof reply, REPLY_NS);
    const int64_t start = sw_now_ns(), end = start + duration_ns;
    size_t exchanges = 0;
    uint64_t lost = 0;
    for (int64_t next = start + chatter_ns; chatter_ns > 0 && next < end && !sw_stop_requested;
         next += chatter_ns) {
        if (sw_sleep_until(next))
            break;
        char token[64];
        snprintf(token, sizeof token, "C %zu", exchanges + lost);
        send_line(token);
        int64_t sent = sw_now_ns(), deadline = sent + chatter_ns;
        const char *line;
        while ((line = read_line(deadline, reply, sizeof reply)) != NULL && strcmp(line, token) != 0)
            ;
        if (line != NULL && exchanges < MAX_CHATTER)
            rtt[exchanges++] = sw_now_ns() - sent;
        else
            lost++;
        while (next + chatter_ns <= sw_now_ns()) /* a reply that took longer than the interval */
            next += chatter_ns;
    }
    if (!sw_stop_requested)
        sw_sleep_until(end);
    const int64_t stopping = sw_now_ns();
    must("stop", "OK stop", reply, sizeof reply, REPLY_NS + period_ns / 2); /* its last fall on its grid */
    int64_t edges = 0;
    if (sw_parse_int(reply + strlen("OK stop "), 0, INT64_MAX, &edges) != 0)
        fail("the unit's answer to stop is garbled: %s", reply);
    if (sw_stop_requested)
        fail("stopped by a signal; the unit's wave is stopped (%lld edges)", (long long)edges);
    if (sw_write_file(PROG, log, "# jitterlab-edges v1 clock=none impl=unit\n# dropped=%lld\n# end edges=0\n",
                      (long long)edges) != 0)
        return 1;
    if (chatter_path != NULL) {
        struct sw_file w;
        if (sw_file_open(&w, PROG, "chatter log ", chatter_path) != 0)
            return 1;
        for (size_t i = 0; i < exchanges; i++)
            fprintf(w.f, "%lld\n", (long long)rtt[i]);
        fprintf(w.f, "# lost=%llu\n", (unsigned long long)lost);
        if (sw_file_commit(&w) != 0)
            return 1;
    }
    printf("unit: edges=%lld run_ns=%lld tty=%s\n", (long long)edges, (long long)(stopping - start), tty_path);
    return 0;
}
