/* c-gpiod: the GPIO character device through libgpiod (the modern libsoc), relative sleeps.
 * Built against libgpiod 1.x (Debian 12, Raspberry Pi OS bookworm) or 2.x (-DJL_GPIOD_V2). */
#include <gpiod.h>

#include "sw_common.h"

#define IMPL "c-gpiod"
#define CONSUMER "jitterlab"

static int pin_errno = 0;

#ifdef JL_GPIOD_V2
static struct gpiod_line_request *request;
static unsigned int offset;

static void set_pin(int level)
{
    enum gpiod_line_value v = level ? GPIOD_LINE_VALUE_ACTIVE : GPIOD_LINE_VALUE_INACTIVE;
    if (gpiod_line_request_set_value(request, offset, v) != 0 && pin_errno == 0)
        pin_errno = errno ? errno : EIO;
}

static int request_output(struct gpiod_chip *chip, unsigned int line)
{
    struct gpiod_line_settings *settings = gpiod_line_settings_new();
    struct gpiod_line_config *config = gpiod_line_config_new();
    struct gpiod_request_config *req = gpiod_request_config_new();
    int rc = -1;
    offset = line;
    if (settings && config && req &&
        gpiod_line_settings_set_direction(settings, GPIOD_LINE_DIRECTION_OUTPUT) == 0 &&
        gpiod_line_config_add_line_settings(config, &offset, 1, settings) == 0) {
        gpiod_request_config_set_consumer(req, CONSUMER);
        request = gpiod_chip_request_lines(chip, req, config);
        rc = request ? 0 : -1;
    }
    gpiod_request_config_free(req);
    gpiod_line_config_free(config);
    gpiod_line_settings_free(settings);
    return rc;
}
#else
static struct gpiod_line *gline;

static void set_pin(int level)
{
    if (gpiod_line_set_value(gline, level) != 0 && pin_errno == 0)
        pin_errno = errno ? errno : EIO;
}

static int request_output(struct gpiod_chip *chip, unsigned int line)
{
    gline = gpiod_chip_get_line(chip, line);
    return gline && gpiod_line_request_output(gline, CONSUMER, 0) == 0 ? 0 : -1;
}
#endif

int main(int argc, char **argv)
{
    /* --chip and --line are this program's pin flags; the rest are every impl's */
    const char *chip_path = NULL;
    int64_t line = -1;
    char *rest[64];
    int n = 0;
    rest[n++] = argv[0];
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--chip") == 0 && i + 1 < argc) {
            chip_path = argv[++i];
        } else if (strcmp(argv[i], "--line") == 0 && i + 1 < argc) {
            if (sw_parse_int(argv[++i], 0, 65535, &line) != 0)
                sw_usage_exit(IMPL, "--line must be a line offset 0..65535");
        } else if (n < 63) {
            rest[n++] = argv[i];
        }
    }
    if (chip_path == NULL || line < 0)
        sw_usage_exit(IMPL, "--chip /dev/gpiochipN and --line OFFSET are required");
    rest[n++] = "--pin";
    rest[n++] = (char *)chip_path; /* satisfies the common parser; the pin is the chip's line */
    rest[n] = NULL;
    struct sw_args a = sw_parse_args(n, rest, IMPL);
    struct sw_log log;
    if (sw_log_init(&log, &a) != 0)
        sw_die(IMPL, "cannot allocate the edge log", NULL);
    struct gpiod_chip *chip = gpiod_chip_open(chip_path);
    if (chip == NULL)
        sw_die(IMPL, "cannot open the GPIO chip", chip_path);
    if (request_output(chip, (unsigned int)line) != 0) {
        fprintf(stderr, "%s: cannot request line %lld of %s as output: %s%s\n", IMPL, (long long)line,
                chip_path, strerror(errno),
                errno == EBUSY ? " (another consumer holds it; gpioinfo names it)" : "");
        return 1;
    }
    sw_install_stop_handlers();
    sw_run(&a, &log, set_pin, SW_SLEEP_RELATIVE);
    int rc = sw_log_write(&log, a.log, IMPL) == 0 ? 0 : 1;
#ifdef JL_GPIOD_V2
    gpiod_line_request_release(request);
#else
    gpiod_line_release(gline);
#endif
    gpiod_chip_close(chip);
    if (pin_errno != 0) {
        fprintf(stderr, "%s: setting line %lld of %s failed: %s\n", IMPL, (long long)line, chip_path,
                strerror(pin_errno));
        rc = 1;
    }
    return rc;
}
