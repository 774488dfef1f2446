"""The constant scripts and configuration text of the qemu target.

Nothing from the user or a campaign is ever put into them: the launcher gets qemu's argv as
positional parameters; the guest's stage 2 reads its data (the host name) from files.
"""

READY = "@@jitterlab-ready"
FAILED = "@@jitterlab-init-failed"  # the init's and stage 2's failure lines start with it

# The guest's stage 2, run by its init (init.c) with /bin/sh from this machine's root, as
# root, with the console as stdout: mount what the kernel offers, start sshd, say it is ready.
STAGE2 = r"""
b=/run/jitterlab
fail() { echo "@@jitterlab-init-failed stage2 $*"; exit 3; }
cat "$b/hostname" > /proc/sys/kernel/hostname
mount -t securityfs securityfs /sys/kernel/security 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null
[ -x /usr/sbin/sshd ] || fail "/usr/sbin/sshd is missing on this machine (apt install openssh-server)"
mkdir -p /run/sshd
/usr/sbin/sshd -f "$b/sshd_config" -E /run/sshd.log || fail "sshd: $(tail -n 1 /run/sshd.log)"
n=0
until grep -q '^ *[0-9]*: 00000000:0016 00000000:0000 0A' /proc/net/tcp; do
  n=$((n + 1))
  [ "$n" -lt 600 ] || fail "sshd does not listen on port 22: $(tail -n 1 /run/sshd.log)"
  sleep 0.05
done
echo "@@jitterlab-ready $(cut -d ' ' -f 1 /proc/uptime)"
"""

# The guest's sshd (this machine's /usr/sbin/sshd): root logs in with the key of this boot only.
SSHD_CONFIG = """\
ListenAddress 0.0.0.0
HostKey /run/jitterlab/host_key
AuthorizedKeysFile /run/jitterlab/authorized_keys
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
StrictModes no
UseDNS no
PrintMotd no
PrintLastLog no
PidFile none
MaxSessions 100
MaxStartups 100
SetEnv SHLVL=1
LogLevel INFO
"""
