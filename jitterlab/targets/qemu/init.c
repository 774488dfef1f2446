/* PID 1 of jitterlab's qemu guests, in the initramfs jitterlab builds (qemu_initrd.py).
 *
 * It loads the modules the boot needs (/modules/NN-name.ko, in name order), mounts the root file
 * system read-only — this machine's (9p tag "jlroot"), or the board's own on a disk when the kernel
 * command line says jitterlab.root=/dev/vda (an ext4 image) — under the kernel package's own tree
 * (9p tag "jlkernel") and a tmpfs for writes, with overlayfs; mounts the per-boot share (9p tag
 * "jlboot") at /run/jitterlab — on a machine without virtio (jitterlab.shares=none) there is no
 * kernel tree and the per-boot files are the initramfs's /jlboot; brings up lo and eth0 (qemu user networking: 10.0.2.15/24); then
 * switches to the new root, runs /run/jitterlab/stage2.sh with /bin/sh, and reaps orphans forever.
 *
 * A failure prints one line, "@@jitterlab-init-failed STEP ARG: ERROR", on the console and powers
 * the guest off, so the host sees qemu exit instead of a hang.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <net/route.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define NINEP_OPTS "trans=virtio,version=9p2000.L,msize=262144,cache=loose"

static void fail_because(const char *step, const char *arg, const char *why)
{
    dprintf(2, "@@jitterlab-init-failed %s %s: %s\n", step, arg, why);
    sync();
    reboot(RB_POWER_OFF);
    for (;;)
        pause();
}

static void fail(const char *step, const char *arg)
{
    fail_because(step, arg, strerror(errno));
}

static void must_mount(const char *src, const char *dst, const char *type, unsigned long flags,
                       const char *opts)
{
    if (mkdir(dst, 0755) != 0 && errno != EEXIST)
        fail("mkdir", dst);
    if (mount(src, dst, type, flags, opts) != 0)
        fail(type ? type : "move", dst);
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static void load_modules(void)
{
    struct dirent **names;
    int n = scandir("/modules", &names, NULL, by_name);
    if (n < 0)
        return; /* a kernel with everything built in */
    for (int i = 0; i < n; i++) {
        char path[512];
        if (names[i]->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "/modules/%s", names[i]->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            fail("open", path);
        if (syscall(SYS_finit_module, fd, "", 0) != 0 && errno != EEXIST)
            fail("finit_module", path);
        close(fd);
    }
}

static void set_addr(int sock, unsigned long request, const char *ifname, const char *addr)
{
    struct ifreq ifr;
    struct sockaddr_in *sin = (struct sockaddr_in *)&ifr.ifr_addr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    sin->sin_family = AF_INET;
    inet_pton(AF_INET, addr, &sin->sin_addr);
    if (ioctl(sock, request, &ifr) != 0)
        fail("ioctl address", ifname);
}

static void link_up(int sock, const char *ifname)
{
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    snprintf(ifr.ifr_name, IFNAMSIZ, "%s", ifname);
    if (ioctl(sock, SIOCGIFFLAGS, &ifr) != 0)
        fail("ioctl flags", ifname);
    ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
    if (ioctl(sock, SIOCSIFFLAGS, &ifr) != 0)
        fail("ioctl up", ifname);
}

/* The first interface that is not lo; virtio_net registers it while its module loads, but wait
 * a little in case the probe runs asynchronously. */
static void first_nic(char *name, size_t size)
{
    for (int tries = 0; tries < 200; tries++) {
        DIR *d = opendir("/sys/class/net");
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL) {
            if (e->d_name[0] != '.' && strcmp(e->d_name, "lo") != 0 && strlen(e->d_name) < size) {
                memcpy(name, e->d_name, strlen(e->d_name) + 1);
                closedir(d);
                return;
            }
        }
        if (d)
            closedir(d);
        struct timespec pause_ts = {0, 25 * 1000 * 1000};
        nanosleep(&pause_ts, NULL);
    }
    errno = ENODEV;
    fail("network", "no interface besides lo");
}

static void network(void)
{
    char nic[IFNAMSIZ];
    int sock = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (sock < 0)
        fail("socket", "AF_INET");
    link_up(sock, "lo");
    first_nic(nic, sizeof nic);
    set_addr(sock, SIOCSIFADDR, nic, "10.0.2.15");
    set_addr(sock, SIOCSIFNETMASK, nic, "255.255.255.0");
    link_up(sock, nic);

    struct rtentry route;
    memset(&route, 0, sizeof route);
    struct sockaddr_in *gw = (struct sockaddr_in *)&route.rt_gateway;
    struct sockaddr_in *dst = (struct sockaddr_in *)&route.rt_dst;
    struct sockaddr_in *mask = (struct sockaddr_in *)&route.rt_genmask;
    gw->sin_family = dst->sin_family = mask->sin_family = AF_INET;
    inet_pton(AF_INET, "10.0.2.2", &gw->sin_addr);
    route.rt_flags = RTF_UP | RTF_GATEWAY;
    route.rt_dev = nic;
    if (ioctl(sock, SIOCADDRT, &route) != 0 && errno != EEXIST)
        fail("ioctl route", nic);
    close(sock);
}

/* The value of a word KEY=VALUE of the kernel command line, or NULL. */
static const char *cmdline_value(const char *key, char *buf, size_t size)
{
    int fd = open("/proc/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    ssize_t n = read(fd, buf, size - 1);
    close(fd);
    if (n <= 0)
        return NULL;
    buf[n] = '\0';
    size_t klen = strlen(key);
    for (char *word = strtok(buf, " \n"); word != NULL; word = strtok(NULL, " \n"))
        if (strncmp(word, key, klen) == 0 && word[klen] == '=')
            return word + klen + 1;
    return NULL;
}

/* The read-only lower root: the board's own disk when the command line names one, else this
 * machine's root over 9p. The disk's driver may register it a little after its module loaded. */
static void mount_root(void)
{
    char buf[4096];
    const char *disk = cmdline_value("jitterlab.root", buf, sizeof buf);
    if (disk == NULL) {
        must_mount("jlroot", "/lower", "9p", MS_RDONLY, NINEP_OPTS);
        return;
    }
    char device[256];
    snprintf(device, sizeof device, "%s", disk);
    struct stat st;
    for (int tries = 0; stat(device, &st) != 0 && tries < 400; tries++) {
        struct timespec pause_ts = {0, 25 * 1000 * 1000};
        nanosleep(&pause_ts, NULL);
    }
    must_mount(device, "/lower", "ext4", MS_RDONLY, "noload");
}

int main(void)
{
    must_mount("devtmpfs", "/dev", "devtmpfs", MS_NOSUID, "mode=0755");
    must_mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    must_mount("sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
    load_modules();
    network();

    mount_root();
    char shares_buf[4096];
    const char *shares = cmdline_value("jitterlab.shares", shares_buf, sizeof shares_buf);
    int ninep = shares == NULL || strcmp(shares, "none") != 0;
    if (ninep)
        must_mount("jlkernel", "/kernel", "9p", MS_RDONLY, NINEP_OPTS);
    must_mount("tmpfs", "/upper", "tmpfs", 0, "mode=0755");
    if (mkdir("/upper/u", 0755) != 0 || mkdir("/upper/w", 0755) != 0)
        fail("mkdir", "/upper/u");
    must_mount("overlay", "/newroot", "overlay", 0,
               ninep ? "lowerdir=/kernel:/lower,upperdir=/upper/u,workdir=/upper/w"
                     : "lowerdir=/lower,upperdir=/upper/u,workdir=/upper/w");

    must_mount("/dev", "/newroot/dev", NULL, MS_MOVE, NULL);
    must_mount("/proc", "/newroot/proc", NULL, MS_MOVE, NULL);
    must_mount("/sys", "/newroot/sys", NULL, MS_MOVE, NULL);
    must_mount("devpts", "/newroot/dev/pts", "devpts", MS_NOSUID | MS_NOEXEC, "mode=0620,ptmxmode=0666");
    must_mount("tmpfs", "/newroot/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
    must_mount("tmpfs", "/newroot/run", "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755");
    must_mount("tmpfs", "/newroot/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777");
    must_mount("tmpfs", "/newroot/root", "tmpfs", 0, "mode=0700");
    if (ninep)
        must_mount("jlboot", "/newroot/run/jitterlab", "9p", MS_RDONLY, NINEP_OPTS);
    else /* a machine without virtio: the per-boot files came in the initramfs */
        must_mount("/jlboot", "/newroot/run/jitterlab", NULL, MS_BIND, NULL);

    if (chdir("/newroot") != 0)
        fail("chdir", "/newroot");
    if (mount(".", "/", NULL, MS_MOVE, NULL) != 0)
        fail("move", "/newroot");
    if (chroot(".") != 0 || chdir("/") != 0)
        fail("chroot", "/newroot");

    pid_t stage2 = fork();
    if (stage2 < 0)
        fail("fork", "stage2");
    if (stage2 == 0) {
        setsid();
        execl("/bin/sh", "sh", "/run/jitterlab/stage2.sh", (char *)NULL);
        fail("exec", "/bin/sh");
    }
    for (;;) {
        int status;
        pid_t pid = wait(&status);
        if (pid == stage2 && !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            char why[64];
            snprintf(why, sizeof why, "exit status %d",
                     WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status));
            fail_because("stage2", "/run/jitterlab/stage2.sh", why);
        }
        if (pid < 0)
            sleep(1); /* no children now: orphans arrive when their parents exit */
    }
}
