/* The portable core: see core.h for the protocol. C11, no library: the unit's layer links it with
 * libgcc only (64-bit division). */
#include "core.h"

#define RX_RING 256u /* a power of two: free-running indexes wrap with it */
#define MAX_DIVIDER 65536u
#define MAX_PERIOD_NS 1000000000000ull /* 1000 s: the products below stay in 64 bits */

static volatile char rx_ring[RX_RING];
static volatile uint32_t rx_head; /* written by jl_core_rx */
static volatile uint32_t rx_tail; /* written by jl_core_poll */

static char line[JL_LINE_MAX + 1];
static uint32_t line_len;
static int line_overflow;

static volatile int running;
static volatile int stopping; /* stop asked: the wave ends at its next half-period boundary */
static volatile int stopped;  /* it ended there: the stop's answer is due */
static volatile int level;
static volatile uint32_t divider = 1, sub;
static volatile uint64_t edges;
static uint64_t period_ns; /* 0: none set */
static struct jl_timing timing;

void jl_core_rx(char c)
{
    uint32_t head = rx_head;
    if (head - rx_tail >= RX_RING)
        return; /* full: the byte is lost, and the line it belongs to is refused as garbled */
    rx_ring[head % RX_RING] = c;
    rx_head = head + 1;
}

void jl_core_tick(void)
{
    if (!running)
        return;
    if (++sub < divider)
        return;
    sub = 0;
    if (stopping && !level) { /* low since the last boundary: the wave is over */
        jl_unit_timer_stop();
        running = 0;
        stopped = 1;
        return;
    }
    level ^= 1;
    jl_unit_pin(level);
    edges++;
    if (stopping) { /* that was the last fall, on the wave's own grid */
        jl_unit_timer_stop();
        running = 0;
        stopped = 1;
    }
}

static uint32_t gcd(uint32_t a, uint32_t b)
{
    while (b != 0) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

const char *jl_core_timing(uint64_t ns, struct jl_timing *out)
{
    if (ns == 0 || ns > MAX_PERIOD_NS)
        return "out of range (1 ns to 1000 s)";
    /* ticks = ns * hz / 1e9, exactly: with the fraction reduced, num <= hz and den <= 1e9 */
    uint32_t g = gcd(jl_unit.timer_hz, 1000000000u);
    uint64_t num = jl_unit.timer_hz / g, den = 1000000000u / g;
    uint64_t ticks = ns / den * num + (ns % den) * num / den;
    if (ticks / 2 < jl_unit.min_reload)
        return "shorter than the unit keeps up with";
    if ((ns % den) * num % den != 0)
        return "not a whole number of timer ticks";
    if (ticks % 2 != 0)
        return "an odd number of timer ticks (a half period is not whole)";
    uint64_t half = ticks / 2;
    uint64_t d = (half + jl_unit.max_reload - 1) / jl_unit.max_reload;
    for (; d <= MAX_DIVIDER; d++) {
        if (half % d == 0 && half / d >= jl_unit.min_reload && half / d <= jl_unit.max_reload) {
            out->reload = (uint32_t)(half / d);
            out->divider = (uint32_t)d;
            return 0;
        }
    }
    return "longer than the timer can count in whole steps";
}

/* --- replies ------------------------------------------------------------------------------------ */

struct reply {
    char text[JL_LINE_MAX + 96];
    uint32_t len;
};

static void put(struct reply *r, const char *s)
{
    while (*s != '\0' && r->len < sizeof r->text - 1)
        r->text[r->len++] = *s++;
}

static void put_u64(struct reply *r, uint64_t v)
{
    char digits[21];
    int n = 0;
    do {
        digits[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v != 0);
    while (n > 0 && r->len < sizeof r->text - 1)
        r->text[r->len++] = digits[--n];
}

static void send(struct reply *r)
{
    r->text[r->len++] = '\n';
    jl_unit_send(r->text, r->len);
}

static void say(const char *a, const char *b)
{
    struct reply r;
    r.len = 0;
    put(&r, a);
    put(&r, b);
    send(&r);
}

/* --- commands ----------------------------------------------------------------------------------- */

static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    int n = 0;
    for (; *s >= '0' && *s <= '9'; s++, n++) {
        if (n == 19)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    if (n == 0 || *s != '\0')
        return -1;
    *out = v;
    return 0;
}

static int is(const char *a, const char *b)
{
    while (*a != '\0' && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

static void cmd_period(const char *arg)
{
    uint64_t ns;
    struct jl_timing t;
    struct reply r;
    r.len = 0;
    if (running || stopping) {
        say("ERR P ", "running (stop first)");
        return;
    }
    if (parse_u64(arg, &ns) != 0) {
        say("ERR P ", "expects a period in ns");
        return;
    }
    const char *why = jl_core_timing(ns, &t);
    if (why != 0) {
        put(&r, "ERR P ");
        put_u64(&r, ns);
        put(&r, " ");
        put(&r, why);
        send(&r);
        return;
    }
    period_ns = ns;
    timing = t;
    put(&r, "OK P ");
    put_u64(&r, ns);
    send(&r);
}

static void cmd_start(void)
{
    if (running || stopping) {
        say("ERR start ", "running");
        return;
    }
    if (period_ns == 0) {
        say("ERR start ", "no period (send P first)");
        return;
    }
    edges = 1;
    sub = 0;
    stopping = 0;
    divider = timing.divider;
    level = 1;
    jl_unit_pin(1); /* the first edge is now, as the programs on Linux make theirs */
    running = 1;
    jl_unit_timer_start(timing.reload);
    say("OK start", "");
}

static void answer_stop(void)
{
    struct reply r;
    r.len = 0;
    put(&r, "OK stop ");
    put_u64(&r, edges);
    send(&r);
}

/* The wave ends on its own grid (its last fall at a half-period boundary, not at the moment the
 * command came), so that its last period is as long as the others; the answer waits for it. */
static void cmd_stop(void)
{
    if (running)
        stopping = 1;
    else
        answer_stop();
}

static void cmd_info(void)
{
    struct reply r;
    r.len = 0;
    put(&r, "OK info ");
    put(&r, jl_unit.name);
    put(&r, " timer_hz=");
    put_u64(&r, jl_unit.timer_hz);
    put(&r, " min_reload=");
    put_u64(&r, jl_unit.min_reload);
    put(&r, " max_reload=");
    put_u64(&r, jl_unit.max_reload);
    send(&r);
}

static void command(const char *s)
{
    if (*s == '\0')
        return;
    if (is(s, "ping"))
        say("pong", "");
    else if (is(s, "info"))
        cmd_info();
    else if (s[0] == 'P' && s[1] == ' ')
        cmd_period(s + 2);
    else if (is(s, "start"))
        cmd_start();
    else if (is(s, "stop"))
        cmd_stop();
    else if (s[0] == 'C' && (s[1] == ' ' || s[1] == '\0'))
        say(s, "");
    else
        say("ERR unknown command: ", s);
}

int jl_core_waiting(void)
{
    return rx_tail != rx_head || stopped;
}

int jl_core_poll(void)
{
    if (stopped) {
        stopped = 0;
        stopping = 0;
        answer_stop();
        return 1;
    }
    while (rx_tail != rx_head) {
        char c = rx_ring[rx_tail % RX_RING];
        rx_tail = rx_tail + 1;
        if (c == '\r')
            continue;
        if (c != '\n') {
            if (line_len < JL_LINE_MAX)
                line[line_len++] = c;
            else
                line_overflow = 1;
            continue;
        }
        line[line_len] = '\0';
        if (line_overflow)
            say("ERR ", "line too long");
        else
            command(line);
        line_len = 0;
        line_overflow = 0;
        return 1;
    }
    return 0;
}
