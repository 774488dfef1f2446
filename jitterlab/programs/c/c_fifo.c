/* c-fifo: c-mmap plus SCHED_FIFO, mlockall and absolute deadlines (no drift). */
#include <sched.h>

#include "sw_common.h"

#define IMPL "c-fifo"

static struct sw_pin pin;

static void set_pin(int level)
{
    sw_pin_set(&pin, level);
}

/* Returns NULL when real-time setup worked, else what was refused. */
static const char *become_realtime(int prio, char *why, size_t why_len)
{
    if (mlockall(MCL_CURRENT | MCL_FUTURE) != 0) {
        snprintf(why, why_len, "mlockall: %s", strerror(errno));
        return why;
    }
    struct sched_param sp = {.sched_priority = prio};
    if (sched_setscheduler(0, SCHED_FIFO, &sp) != 0) {
        snprintf(why, why_len, "sched_setscheduler: %s", strerror(errno));
        munlockall(); /* the fallback is plain SCHED_OTHER, not half real-time */
        return why;
    }
    return NULL;
}

int main(int argc, char **argv)
{
    struct sw_args a = sw_parse_args(argc, argv, IMPL);
    struct sw_log log;
    /* Allocated and prefaulted before mlockall, so MCL_FUTURE never refuses it. */
    if (sw_log_init(&log, &a) != 0)
        sw_die(IMPL, "cannot allocate the edge log", NULL);
    pin = sw_open_pin(IMPL, &a);
    char why[160];
    if (become_realtime(a.prio, why, sizeof why) != NULL) {
        if (!a.allow_no_rt) {
            fprintf(stderr, "%s: SCHED_FIFO refused (%s); pass --allow-no-rt to run as "
                            "SCHED_OTHER\n", IMPL, why);
            return 3;
        }
        fprintf(stderr, "warning: %s: SCHED_FIFO refused (%s); running SCHED_OTHER\n", IMPL, why);
    }
    sw_install_stop_handlers();
    sw_run(&a, &log, set_pin, SW_SLEEP_ABSOLUTE);
    munlockall(); /* writing the log may allocate; the measurement is over */
    return sw_log_write(&log, a.log, IMPL) == 0 ? 0 : 1;
}
