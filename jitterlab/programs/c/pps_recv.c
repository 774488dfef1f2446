/* pps-recv: counts the UDP packets that reach a port, reading them in batches
 * with recvmmsg, until SIGTERM or --max-duration-ns. Creates --ready once the
 * socket is bound; at the end writes one line to --stats:
 *   jitterlab-pps-recv v1 received=N bytes=N first_ns=T last_ns=T drops=N rcvbuf=N
 * first/last_ns: CLOCK_MONOTONIC arrival of the first and last batch; drops: packets the
 * kernel dropped because the socket buffer (rcvbuf bytes) was full (SO_RXQ_OVFL). */
#include "udp_common.h"

#define PROG "pps-recv"
#define USAGE                                                                             \
    "usage: " PROG " --bind ADDR --port N --ready PATH --stats PATH [--batch N] "         \
    "[--rcvbuf BYTES] [--max-duration-ns N]\n"
#define MAX_BATCH 1024
#define PACKET_BUF 2048 /* longer packets are truncated; MSG_TRUNC still counts their length */
#define RECV_TIMEOUT_NS 100000000LL

#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL 40
#endif

int main(int argc, char **argv)
{
    const char *bind_addr = NULL, *ready = NULL, *stats = NULL;
    int64_t port = -1, batch = 32, rcvbuf = 4 << 20, max_duration_ns = 3600LL * 1000000000LL;
    for (int i = 1; i < argc; i++) {
        const char *flag = argv[i];
        if (strcmp(flag, "--help") == 0) {
            fputs(USAGE, stdout);
            return 0;
        }
        if (i + 1 >= argc)
            udp_bad_flag(PROG, flag, NULL);
        const char *val = argv[++i];
        int ok = 1;
        if (strcmp(flag, "--bind") == 0)
            bind_addr = val;
        else if (strcmp(flag, "--ready") == 0)
            ready = val;
        else if (strcmp(flag, "--stats") == 0)
            stats = val;
        else if (strcmp(flag, "--port") == 0)
            ok = udp_parse_int(val, 1, 65535, &port) == 0;
        else if (strcmp(flag, "--batch") == 0)
            ok = udp_parse_int(val, 1, MAX_BATCH, &batch) == 0;
        else if (strcmp(flag, "--rcvbuf") == 0)
            ok = udp_parse_int(val, 4096, 1 << 30, &rcvbuf) == 0;
        else if (strcmp(flag, "--max-duration-ns") == 0)
            ok = udp_parse_int(val, 1, INT64_MAX / 2, &max_duration_ns) == 0;
        else
            ok = 0;
        if (!ok)
            udp_bad_flag(PROG, flag, val);
    }
    if (bind_addr == NULL || port < 0 || ready == NULL || stats == NULL)
        udp_usage_error(PROG, "--bind, --port, --ready and --stats are required");
    struct sockaddr_storage addr;
    socklen_t addr_len = 0;
    if (udp_address(bind_addr, (int)port, &addr, &addr_len) != 0)
        udp_usage_error(PROG, "--bind needs a numeric IPv4 or IPv6 address");

    udp_install_stop_handlers();
    int fd = socket(addr.ss_family, SOCK_DGRAM, 0);
    if (fd < 0)
        udp_die(PROG, "cannot create a UDP socket");
    int want = (int)rcvbuf, one = 1;
    /* SO_RCVBUFFORCE passes net.core.rmem_max when we may (CAP_NET_ADMIN) */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    int got = 0;
    socklen_t got_len = sizeof got;
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &got_len);
    if (bind(fd, (struct sockaddr *)&addr, addr_len) != 0) {
        fprintf(stderr, PROG ": cannot bind %s port %lld: %s\n", bind_addr, (long long)port,
                strerror(errno));
        return 1;
    }
    struct timeval tv = {.tv_sec = 0, .tv_usec = RECV_TIMEOUT_NS / 1000};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);

    static unsigned char bufs[MAX_BATCH][PACKET_BUF];
    static char controls[MAX_BATCH][CMSG_SPACE(sizeof(uint32_t))];
    static struct iovec iov[MAX_BATCH];
    static struct mmsghdr msgs[MAX_BATCH];
    for (int i = 0; i < batch; i++) {
        iov[i].iov_base = bufs[i];
        iov[i].iov_len = PACKET_BUF;
        msgs[i].msg_hdr.msg_iov = &iov[i];
        msgs[i].msg_hdr.msg_iovlen = 1;
    }
    if (udp_write_file(PROG, ready, "ready\n") != 0)
        return 1;

    const int64_t end_ns = udp_now_ns() + max_duration_ns;
    unsigned long long received = 0, bytes = 0;
    uint32_t drops = 0;
    int64_t first_ns = 0, last_ns = 0;
    while (!udp_stop_requested && udp_now_ns() < end_ns) {
        for (int i = 0; i < batch; i++) {
            msgs[i].msg_hdr.msg_control = controls[i];
            msgs[i].msg_hdr.msg_controllen = sizeof controls[i];
        }
        int n = recvmmsg(fd, msgs, (unsigned)batch, MSG_WAITFORONE | MSG_TRUNC, NULL);
        if (n < 0) {
            if (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)
                continue;
            udp_die(PROG, "recvmmsg failed");
        }
        last_ns = udp_now_ns();
        if (received == 0)
            first_ns = last_ns;
        received += (unsigned)n;
        for (int i = 0; i < n; i++) {
            bytes += msgs[i].msg_len;
            for (struct cmsghdr *c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c != NULL;
                 c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
                if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL)
                    memcpy(&drops, CMSG_DATA(c), sizeof drops);
        }
    }
    char line[512];
    snprintf(line, sizeof line,
             "jitterlab-pps-recv v1 received=%llu bytes=%llu first_ns=%lld last_ns=%lld "
             "drops=%lu rcvbuf=%d\n",
             received, bytes, (long long)first_ns, (long long)last_ns, (unsigned long)drops, got);
    close(fd);
    return udp_write_file(PROG, stats, line) == 0 ? 0 : 1;
}
