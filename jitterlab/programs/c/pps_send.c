/* pps-send: sends UDP packets of --size bytes to ADDR:PORT with sendmmsg, in
 * batches of --batch, as fast as it can (--rate 0) or paced to --rate packets/s
 * (one batch at a time, so bursts are --batch long), for --duration-ns. At the
 * end writes one line to --stats:
 *   jitterlab-pps-send v1 sent=N bytes=N elapsed_ns=T send_errors=N
 * sent: packets the kernel accepted; elapsed_ns: first send to the end of the last. */
#include "udp_common.h"

#define PROG "pps-send"
#define USAGE                                                                              \
    "usage: " PROG " --host ADDR --port N --duration-ns N --stats PATH [--size BYTES] "    \
    "[--batch N] [--rate PACKETS_PER_S]\n"
#define MAX_BATCH 1024
#define MAX_SIZE 65507

int main(int argc, char **argv)
{
    const char *host = NULL, *stats = NULL;
    int64_t port = -1, size = 64, batch = 32, rate = 0, duration_ns = -1;
    const struct udp_flag flags[] = {
        {"--host", &host, NULL, 0, 0},
        {"--stats", &stats, NULL, 0, 0},
        {"--port", NULL, &port, 1, 65535},
        {"--size", NULL, &size, 1, MAX_SIZE},
        {"--batch", NULL, &batch, 1, MAX_BATCH},
        {"--rate", NULL, &rate, 0, 1000000000LL},
        {"--duration-ns", NULL, &duration_ns, 1, INT64_MAX / 4},
        {NULL},
    };
    udp_parse_flags(PROG, USAGE, argc, argv, flags, NULL);
    if (host == NULL || port < 0 || duration_ns < 0 || stats == NULL)
        udp_usage_error(PROG, "--host, --port, --duration-ns and --stats are required");
    struct sockaddr_storage addr;
    socklen_t addr_len = udp_address(PROG, "--host", host, port, &addr);

    sw_install_stop_handlers();
    int fd = udp_connected_socket(PROG, &addr, addr_len);
    unsigned char *payload = malloc((size_t)size);
    if (payload == NULL)
        udp_die(PROG, "cannot allocate the payload");
    memset(payload, 0x5a, (size_t)size);
    static struct iovec iov;
    static struct mmsghdr msgs[MAX_BATCH];
    iov.iov_base = payload;
    iov.iov_len = (size_t)size;
    for (int i = 0; i < batch; i++) {
        msgs[i].msg_hdr.msg_iov = &iov;
        msgs[i].msg_hdr.msg_iovlen = 1;
    }

    unsigned long long sent = 0, errors = 0;
    const int64_t start = sw_now_ns();
    int64_t now = start;
    for (unsigned long long k = 0; !sw_stop_requested; k++) {
        if (rate > 0) {
            /* batch k leaves at start + k * batch / rate seconds */
            int64_t at = start + (int64_t)((double)k * (double)batch * 1e9 / (double)rate);
            if (at - start >= duration_ns || sw_sleep_until(at))
                break;
        }
        int n = sendmmsg(fd, msgs, (unsigned)batch, 0);
        now = sw_now_ns();
        if (n > 0)
            sent += (unsigned)n;
        if (n < (int)batch) {
            /* the rest of the batch was refused (ENOBUFS, ECONNREFUSED before the peer bound) */
            errors += (unsigned long long)(batch - (n > 0 ? n : 0));
            if (n < 0 && errno != ENOBUFS && errno != EAGAIN && errno != ECONNREFUSED &&
                errno != EINTR)
                udp_die(PROG, "sendmmsg failed");
        }
        if (now - start >= duration_ns)
            break;
    }
    close(fd);
    return sw_write_file(PROG, stats,
                         "jitterlab-pps-send v1 sent=%llu bytes=%llu elapsed_ns=%lld "
                         "send_errors=%llu\n",
                         sent, sent * (unsigned long long)size, (long long)(now - start),
                         errors) == 0 ? 0 : 1;
}
