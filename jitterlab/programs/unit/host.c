/* The portable core on the machine that builds it, for the tests of its protocol: a stand-in unit
 * whose transport is stdin/stdout and whose timer is the test's word. Lines starting with '!' are
 * for this stand-in, not the core:
 *   !tick N       N timer interrupts, then "# pin level=L changes=C"
 *   !timing NS    "# timing RELOAD DIVIDER" or "# timing ERR <why>" (jl_core_timing)
 * The timer's clock and limits come from the -D flags of a unit's header, or these defaults. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core.h"

#ifndef JL_TIMER_HZ
#define JL_TIMER_HZ 12500000u
#define JL_MIN_RELOAD 625u
#define JL_MAX_RELOAD 0x00FFFFFFu
#endif

const struct jl_unit jl_unit = {"host", JL_TIMER_HZ, JL_MIN_RELOAD, JL_MAX_RELOAD};

static int pin_level, pin_changes;

void jl_unit_timer_start(uint32_t reload) { printf("# timer start reload=%u\n", (unsigned)reload); }
void jl_unit_timer_stop(void) { printf("# timer stop\n"); }

void jl_unit_pin(int level)
{
    pin_changes += level != pin_level;
    pin_level = level;
}

void jl_unit_send(const char *line, uint32_t len) { fwrite(line, 1, len, stdout); }

int main(void)
{
    char buf[4096];
    while (fgets(buf, sizeof buf, stdin) != NULL) {
        if (buf[0] == '!') {
            unsigned long long n = 0;
            struct jl_timing t;
            if (sscanf(buf, "!tick %llu", &n) == 1) {
                while (n-- > 0)
                    jl_core_tick();
                printf("# pin level=%d changes=%d\n", pin_level, pin_changes);
            } else if (sscanf(buf, "!timing %llu", &n) == 1) {
                const char *why = jl_core_timing(n, &t);
                if (why == NULL)
                    printf("# timing %u %u\n", (unsigned)t.reload, (unsigned)t.divider);
                else
                    printf("# timing ERR %s\n", why);
            }
        } else {
            for (char *c = buf; *c != '\0'; c++)
                jl_core_rx(*c);
        }
        while (jl_core_poll()) /* as a unit's main loop does after each interrupt */
            ;
        fflush(stdout);
    }
    return 0;
}
