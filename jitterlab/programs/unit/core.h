/* The portable core of jitterlab's unit firmware: the command protocol, the square wave made by a
 * timer interrupt, and the count of its edges. A unit's layer (<unit>.c) gives the core a timer, a
 * pin and a transport, and calls it from its interrupts and its main loop.
 *
 * Protocol: one command per line ('\n'; a '\r' is ignored), one reply line per command:
 *   ping        -> pong
 *   info        -> OK info <unit> timer_hz=<Hz> min_reload=<ticks> max_reload=<ticks>
 *   P <ns>      -> OK P <ns>             the period; ERR P ... when the timer cannot make it
 *   start       -> OK start              the pin goes high now and toggles every half period
 *   stop        -> OK stop <edges>       the wave ends at its next half-period boundary (its last
 *                                        fall on its grid: at most half a period later), the pin
 *                                        low; <edges> counts every level change since start
 *   C <text>    -> C <text>              an echo, for Linux to time a round trip (chatter)
 *   (empty)     -> nothing               a resync: ends whatever partial line came before
 *   anything else -> ERR ...
 * Replies are sent from the main loop only, never from an interrupt, so they never interleave. */
#ifndef JL_CORE_H
#define JL_CORE_H

#include <stdint.h>

#define JL_LINE_MAX 64u /* a command's bytes before its newline */

/* What the unit's layer provides. */
struct jl_unit {
    const char *name;
    uint32_t timer_hz;   /* the clock the wave's timer counts */
    uint32_t min_reload; /* fewest timer ticks between two interrupts the unit keeps up with */
    uint32_t max_reload; /* most ticks the timer counts between two interrupts */
};
extern const struct jl_unit jl_unit;
void jl_unit_timer_start(uint32_t reload); /* an interrupt every `reload` ticks calls jl_core_tick() */
void jl_unit_timer_stop(void);             /* no jl_core_tick() once it returns */
void jl_unit_pin(int level);
void jl_unit_send(const char *line, uint32_t len); /* one whole reply, its '\n' included */

/* What the core provides. */
void jl_core_rx(char c);  /* a received byte, from an interrupt or the main loop */
void jl_core_tick(void);  /* the timer's interrupt */
int jl_core_poll(void);   /* main loop: answer one complete command; 0 when none was waiting */
int jl_core_waiting(void); /* received bytes not yet read by jl_core_poll (look with interrupts off) */

/* The timer settings of a period, as the core computes them (exported for tests on the host). */
struct jl_timing {
    uint32_t reload;  /* timer ticks between two interrupts */
    uint32_t divider; /* interrupts per half period */
};
/* 0 and *out set when the unit's timer can make a period of `period_ns` exactly; otherwise a
 * reason (a constant string). */
const char *jl_core_timing(uint64_t period_ns, struct jl_timing *out);

#endif
