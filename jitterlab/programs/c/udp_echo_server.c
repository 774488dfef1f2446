/* udp-echo-server: sends every UDP datagram it receives back to its sender,
 * in the scheduling policy it is given, until SIGTERM or --max-duration-ns.
 * Creates --ready once the socket is bound; prints "echoed=N" when it ends. */
#include "udp_common.h"

#define PROG "udp-echo-server"
#define USAGE                                                                          \
    "usage: " PROG " --bind ADDR --port N --ready PATH [--max-duration-ns N] "         \
    UDP_SCHED_USAGE "\n"
#define RECV_TIMEOUT_NS 100000000LL /* how often the life limit is checked */

int main(int argc, char **argv)
{
    const char *bind_addr = NULL, *ready = NULL;
    int64_t port = -1, max_duration_ns = 3600LL * 1000000000LL;
    struct udp_sched sched = {.policy = UDP_OTHER, .prio = 80};
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (udp_sched_flag(PROG, argc, argv, &i, &sched))
            continue;
        if (i + 1 >= argc)
            udp_bad_flag(PROG, flag, NULL);
        const char *val = argv[++i];
        if (strcmp(flag, "--bind") == 0)
            bind_addr = val;
        else if (strcmp(flag, "--ready") == 0)
            ready = val;
        else if (strcmp(flag, "--port") == 0 && udp_parse_int(val, 1, 65535, &port) == 0)
            continue;
        else if (strcmp(flag, "--max-duration-ns") == 0 &&
                 udp_parse_int(val, 1, INT64_MAX / 2, &max_duration_ns) == 0)
            continue;
        else
            udp_bad_flag(PROG, flag, val);
    }
    if (bind_addr == NULL || port < 0 || ready == NULL)
        udp_usage_error(PROG, "--bind, --port and --ready are required");
    udp_check_sched(PROG, &sched);
    struct sockaddr_storage addr;
    socklen_t addr_len = 0;
    if (udp_address(bind_addr, (int)port, &addr, &addr_len) != 0)
        udp_usage_error(PROG, "--bind needs a numeric IPv4 or IPv6 address");

    udp_install_stop_handlers();
    int fd = socket(addr.ss_family, SOCK_DGRAM, 0);
    if (fd < 0)
        udp_die(PROG, "cannot create a UDP socket");
    if (bind(fd, (struct sockaddr *)&addr, addr_len) != 0) {
        fprintf(stderr, PROG ": cannot bind %s port %lld: %s\n", bind_addr, (long long)port,
                strerror(errno));
        return 1;
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = RECV_TIMEOUT_NS / 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    udp_apply_sched(PROG, &sched);
    if (udp_write_file(PROG, ready, "ready\n") != 0)
        return 1;

    static unsigned char buf[65536];
    const int64_t end_ns = udp_now_ns() + max_duration_ns;
    unsigned long long echoed = 0, send_errors = 0;
    while (!udp_stop_requested && udp_now_ns() < end_ns) {
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
