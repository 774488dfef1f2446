"""What a LAVA qemu job boots, made of the project's own Debian guest: the Debian kernel and board
root jitterlab's qemu targets use (fetched and built once into ~/.cache/jitterlab), the root
converted into the form LAVA appends its test-shell overlay to without libguestfs (a newc cpio
archive: `format: cpio.newc`), and a device dictionary rendered from LAVA's own device-type
templates (lava-server's qemu.jinja2), as lava-server renders it for a device of that type.

Run as a module it prepares them and prints their paths (what examples/lava-qemu-job.yaml needs):
    python -m tests.lava.qemu_guest
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import jinja2

from jitterlab.targets.qemu import kernels, options, rootfs
from jitterlab.targets.qemu.machines.pc import PC

HOSTNAME = "jitterlab-lava"
PROMPT = f"root@{HOSTNAME}:"  # Debian's root .bashrc: \u@\h:\w\$
PACKAGES = ("python3", "gcc", "make", "libc6-dev", "mount", "procps")  # what jitterlab needs; mount: /init
# PID 1 of the ramdisk: no init system in the board root (it is reached over SSH by jitterlab's own
# init); here a root shell on the serial console is what LAVA's test shell drives
INIT = f"""#!/bin/sh
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts devpts /dev/pts
mount -t tmpfs tmpfs /run
mount -t tmpfs tmpfs /dev/shm
# the root (the kernel's tmpfs, half the memory) holds the ramdisk and the bundle; the install
# (~620 MB) and the results go to a tmpfs of their own
mount -t tmpfs -o mode=1777 tmpfs /tmp
echo {HOSTNAME} > /proc/sys/kernel/hostname
echo "jitterlab's Debian guest for LAVA: a root shell on ttyS0"
cd /root
export HOME=/root TERM=vt102 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
exec setsid -c /bin/bash -l </dev/ttyS0 >/dev/ttyS0 2>&1
"""
RECIPE = "2"  # bump when the conversion changes
TEMPLATE_DIRS = (Path("/etc/lava-server/dispatcher-config/device-types"),
                 Path("/usr/share/lava-server/device-types"))


@dataclass(frozen=True)
class Guest:
    kernel: Path  # Debian's bzImage
    ramdisk: Path  # the board root with /init, newc cpio, uncompressed
    release: str


def cache() -> Path:
    return kernels.cache_root() / "lava"


def prepare() -> Guest:
    """The kernel and the root as a ramdisk, from the cache or made (minutes, once)."""
    kernel = kernels.prepare(options.parse_kernel("standard", "lava guest", profile=PC), PC, "lava guest")
    root = rootfs.prepare_board_root("amd64", PACKAGES, "lava guest", kernels.cache_root())
    record = (root.image.parent / "root.json").read_bytes()
    key = hashlib.sha256(record + INIT.encode() + RECIPE.encode()).hexdigest()[:12]
    ramdisk = cache() / f"root-{key}.cpio"
    if not ramdisk.exists():
        ramdisk.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=ramdisk.parent) as tmp:
            staging = Path(tmp) / "root"
            # hard links: only /init is added, the cached tree is never written
            subprocess.run(["cp", "-al", str(root.sysroot), str(staging)], check=True)
            (staging / "init").write_text(INIT)
            (staging / "init").chmod(0o755)
            names = subprocess.run(["find", "."], cwd=staging, check=True, capture_output=True).stdout
            part = Path(tmp) / "root.cpio"
            subprocess.run(["cpio", "--create", "--format", "newc", "--quiet", "--file", str(part)],
                           cwd=staging, input=names, check=True)
            os.replace(part, ramdisk)
    vmlinuz = kernel.tree / "boot" / f"vmlinuz-{kernel.release}"
    return Guest(vmlinuz, ramdisk, kernel.release)


def templates() -> Path:
    """LAVA's device-type templates: lava-server's, else its Debian package unpacked into the cache."""
    for d in TEMPLATE_DIRS:
        if (d / "qemu.jinja2").is_file():
            return d
    version = subprocess.run(["apt-cache", "policy", "lava-server"], capture_output=True, text=True,
                             check=True).stdout
    candidate = next(line.split()[1] for line in version.splitlines() if "Candidate:" in line)
    where = cache() / f"lava-server-{candidate.replace(':', '_')}"
    if not (where / "device-types" / "qemu.jinja2").is_file():
        with tempfile.TemporaryDirectory(dir=cache()) as tmp:
            subprocess.run(["apt-get", "download", f"lava-server={candidate}"], cwd=tmp, check=True,
                           capture_output=True)
            (deb,) = Path(tmp).glob("lava-server_*.deb")
            subprocess.run(["dpkg-deb", "-x", str(deb), f"{tmp}/x"], check=True)
            where.mkdir(parents=True, exist_ok=True)
            shutil.copytree(f"{tmp}/x/usr/share/lava-server/device-types", where / "device-types",
                            dirs_exist_ok=True)
    return where / "device-types"


def device_dictionary(path: Path, *, memory_mb: int = 4096, cpus: int = 2) -> Path:
    """A qemu device (arch amd64) without KVM: qemu.jinja2 rendered as lava-server renders a device
    dictionary extending it; TCG, and a CPU model with x86-64-v2 (numpy's baseline)."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(templates())), trim_blocks=True,
                             autoescape=False)
    text = env.from_string(
        "{% extends 'qemu.jinja2' %}\n"
        "{% set arch = 'amd64' %}\n"
        "{% set no_kvm = True %}\n"
        f"{{% set memory = {memory_mb} %}}\n"
        f"{{% set extra_options = ['-cpu max', '-accel tcg,thread=multi', '-smp {cpus}'] %}}\n"
    ).render()
    path.write_text(text)
    return path


if __name__ == "__main__":
    guest = prepare()
    print(f"kernel: {guest.kernel}\nramdisk: {guest.ramdisk}\ntemplates: {templates()}", file=sys.stdout)
