/* c-file: the libsoc/sysfs style — pwrite() the value file, relative sleeps. */
#include "sw_common.h"

#define IMPL "c-file"

static int pin_fd = -1;
static int pin_errno = 0;

static void set_pin(int level)
{
    const char c = level ? '1' : '0';
    if (pwrite(pin_fd, &c, 1, 0) != 1 && pin_errno == 0)
        pin_errno = errno ? errno : EIO;
}

int main(int argc, char **argv)
{
    struct sw_args a = sw_parse_args(argc, argv, IMPL);
    struct sw_log log;
    if (sw_log_init(&log, &a) != 0)
        sw_die(IMPL, "cannot allocate the edge log", NULL);
    if (a.regs.device != NULL)
        sw_usage_exit(IMPL, "writes a value file: give --pin, not --gpiomem");
    pin_fd = open(a.pin, O_RDWR);
    if (pin_fd < 0)
        sw_die(IMPL, "cannot open pin", a.pin);
    sw_install_stop_handlers();
    sw_run(&a, &log, set_pin, SW_SLEEP_RELATIVE);
    int rc = sw_log_write(&log, a.log, IMPL) == 0 ? 0 : 1;
    if (pin_errno != 0) {
        fprintf(stderr, "%s: writing pin %s failed: %s\n", IMPL, a.pin, strerror(pin_errno));
        rc = 1;
    }
    return rc;
}
