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

#ifndef SO_RXQ_OVFL
#define SO_RXQ_OVFL 40
#endif

int main(int argc, char **argv)
{
    const char *bind_addr = NULL, *ready = NULL, *stats = NULL;
    int64_t port = -1, batch = 32, rcvbuf = 4 << 20, max_duration_ns = 3600LL * 1000000000LL;
    const struct udp_flag flags[] = {
        {"--bind", &bind_addr, NULL, 0, 0},
        {"--ready", &ready, NULL, 0, 0},
        {"--stats", &stats, NULL, 0, 0},
        {"--port", NULL, &port, 1, 65535},
        {"--batch", NULL, &batch, 1, MAX_BATCH},
        {"--rcvbuf", NULL, &rcvbuf, 4096, 1 << 30},
        {"--max-duration-ns", NULL, &max_duration_ns, 1, INT64_MAX / 2},
        {NULL},
    };
    udp_parse_flags(PROG, USAGE, argc, argv, flags, NULL);
    if (bind_addr == NULL || port < 0 || ready == NULL || stats == NULL)
        udp_usage_error(PROG, "--bind, --port, --ready and --stats are required");
    struct sockaddr_storage addr;
    socklen_t addr_len = udp_address(PROG, "--bind", bind_addr, port, &addr);

    sw_install_stop_handlers();
    int fd = udp_socket(PROG, &addr);
    int want = (int)rcvbuf, one = 1;
    /* SO_RCVBUFFORCE passes net.core.rmem_max when we may (CAP_NET_ADMIN) */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &want, sizeof want) != 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &want, sizeof want);
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof one);
    int got = 0;
    socklen_t got_len = sizeof got;
    getsockopt(fd, SOL_SOCKET, SO_RCVBUF, &got, &got_len);
    udp_bind(PROG, fd, bind_addr, port, &addr, addr_len);

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
    if (sw_write_file(PROG, ready, "ready\n") != 0)
        return 1;

    const int64_t end_ns = sw_now_ns() + max_duration_ns;
    unsigned long long received = 0, bytes = 0;
    uint32_t drops = 0;
    int64_t first_ns = 0, last_ns = 0;
    while (!sw_stop_requested && sw_now_ns() < end_ns) {
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
        last_ns = sw_now_ns();
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
    close(fd);
    return sw_write_file(PROG, stats,
                         "jitterlab-pps-recv v1 received=%llu bytes=%llu first_ns=%lld "
                         "last_ns=%lld drops=%lu rcvbuf=%d\n",
                         received, bytes, (long long)first_ns, (long long)last_ns,
                         (unsigned long)drops, got) == 0 ? 0 : 1;
}
