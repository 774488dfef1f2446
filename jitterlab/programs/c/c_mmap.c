/* c-mmap: store the pin byte through a shared mapping, relative sleeps. */
#include "sw_common.h"

#define IMPL "c-mmap"

static struct sw_pin pin;

static void set_pin(int level)
{
    sw_pin_set(&pin, level);
}

int main(int argc, char **argv)
{
    struct sw_args a = sw_parse_args(argc, argv, IMPL);
    struct sw_log log;
    if (sw_log_init(&log, &a) != 0)
        sw_die(IMPL, "cannot allocate the edge log", NULL);
    pin = sw_open_pin(IMPL, &a);
    sw_install_stop_handlers();
    sw_run(&a, &log, set_pin, SW_SLEEP_RELATIVE);
    return sw_log_write(&log, a.log, IMPL) == 0 ? 0 : 1;
}
