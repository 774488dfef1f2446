/* udp-echo-server: sends every UDP datagram it receives back to its sender,
 * in the scheduling policy it is given, until SIGTERM or --max-duration-ns.
 * Creates --ready once the socket is bound; prints "echoed=N" when it ends. */
#include "udp_common.h"

#define PROG "udp-echo-server"
#define USAGE                                                                          \
    "usage: " PROG " --bind ADDR --port N --ready PATH [--max-duration-ns N] "         \
    UDP_SCHED_USAGE "\n"

int main(int argc, char **argv)
{
    const char *bind_addr = NULL, *ready = NULL;
    int64_t port = -1, max_duration_ns = 3600LL * 1000000000LL;
    struct udp_sched sched = {.policy = UDP_OTHER, .prio = 80};
    const struct udp_flag flags[] = {
        {"--bind", &bind_addr, NULL, 0, 0},
        {"--ready", &ready, NULL, 0, 0},
        {"--port", NULL, &port, 1, 65535},
        {"--max-duration-ns", NULL, &max_duration_ns, 1, INT64_MAX / 2},
        {NULL},
    };
    udp_parse_flags(PROG, USAGE, argc, argv, flags, &sched);
    if (bind_addr == NULL || port < 0 || ready == NULL)
        udp_usage_error(PROG, "--bind, --port and --ready are required");
    udp_check_sched(PROG, &sched);
    struct sockaddr_storage addr;
    socklen_t addr_len = udp_address(PROG, "--bind", bind_addr, port, &addr);

    sw_install_stop_handlers();
    int fd = udp_socket(PROG, &addr);
    udp_bind(PROG, fd, bind_addr, port, &addr, addr_len);
    udp_apply_sched(PROG, &sched);
    if (sw_write_file(PROG, ready, "ready\n") != 0)
        return 1;

    static unsigned char buf[65536];
    const int64_t end_ns = sw_now_ns() + max_duration_ns;
    unsigned long long echoed = 0, send_errors = 0;
    while (!sw_stop_requested && sw_now_ns() < end_ns) {
        struct sockaddr_storage peer;
        socklen_t peer_len = sizeof peer;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, (struct sockaddr *)&peer, &peer_len);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            udp_die(PROG, "recvfrom failed");
        }
        if (sendto(fd, buf, (size_t)n, 0, (struct sockaddr *)&peer, peer_len) == n)
            echoed++;
        else
            send_errors++;
    }
    printf("echoed=%llu send_errors=%llu\n", echoed, send_errors);
    close(fd);
    return 0;
}
