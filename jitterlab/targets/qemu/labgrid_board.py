"""Emulated ARM boards for labgrid, made of jitterlab's own arm64 board (targets/qemu): Debian's arm64
kernel, an initramfs with jitterlab's init, and system images that are copies of the board's cached
Debian root. An image is what a lab would flash: its own services start at boot (every executable
in /etc/board.d/), so two images differ in what they run. `hog` adds a CPU hog service (stress-ng
taking the board's one CPU half of the time at SCHED_FIFO): the image a comparison should find worse
for a program that does not run real-time.

What boots the board is labgrid's: `env_file` writes a labgrid environment whose QEMUDriver (machine
virt, the kernel, the disk image, user networking forwarding a loopback port to the board's sshd)
powers it and reads its serial console; `qemu_argv` gives the same board as a plain qemu command
line for a farm whose power switch starts it. `write_lab` writes it all and an image campaign that
runs as written (`jitterlab labgrid-board DIR`).
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import initrd as qemu_initrd
from jitterlab.targets.qemu import kernels as qemu_kernels
from jitterlab.targets.qemu import rootfs as qemu_rootfs
from jitterlab.targets.qemu.options import parse_options
from jitterlab.targets.qemu.scripts import SSHD_CONFIG, STAGE2
from jitterlab.targets.qemu.target import kernel_cmdline

MACHINE = "virt-arm64"
# labgrid's QEMUDriver attaches the disk with if=virtio and its nic with -nic: PCI devices on virt
MODULES = ("virtio_pci", "virtio_mmio", "virtio_blk", "crc32c_generic", "ext4", "overlay", "virtio_net",
           "virtio_rng")
READY = "@@jitterlab-ready"  # what the board's console says once sshd listens: the boot prompt
FLASHED = "/etc/board.d/cpu-hog"
# the image's own services, then jitterlab's stage 2 (sshd, then READY on the console)
BOARD_STAGE2 = ('for s in /etc/board.d/*; do [ -x "$s" ] && "$s" </dev/null >/dev/null 2>&1 & done\n'
                + STAGE2)
# a real-time service that takes the CPU half of the time in slices of 200 ms: what a bad image may
# run. Bursts of a few ms vanish on an emulated CPU whose host is busy (its own stalls are tens of
# ms: the median period error there was the same with and without a 5 ms hog); these stand out of
# any stall (40 ms ones did not always: a busy host's stalls made --until-decided add rounds, a boot
# of each image each). On the emulated board a program saw them hold its CPU for 0.5 s at a time,
# about once a second: a run of 1 s whose burst fell in its warm-up (dropped) had no late period,
# hence runs of 2 s in the farm test's A/B (tests/targets/test_labgrid_farm.py).
CPU_HOG = ("#!/bin/sh\nexec stress-ng --quiet --cpu 1 --cpu-load 50 --cpu-load-slice 200 --sched fifo "
           "--sched-prio 10 --timeout 0\n")


@dataclass(frozen=True)
class Board:
    kernel: Path
    initrd: Path  # jitterlab's init, the modules, and this board's SSH keys and stage 2
    client_key: Path  # the key the board lets in as root
    known_hosts: Path  # the board's host key, for 127.0.0.1 (any port)
    cmdline: str
    root: Path  # the board's Debian root image, the base of every image


def prepare(directory: Path) -> Board:
    """The board's kernel, initramfs and keys in `directory`; the root from jitterlab's cache
    (built once: minutes, as root)."""
    options = parse_options({"machine": MACHINE}, "board")
    profile = options.profile
    kernel = qemu_kernels.prepare(options.kernel, profile, "board")
    root = qemu_rootfs.prepare_board_root(profile.arch.name, profile.board_root_packages, "board",
                                         qemu_kernels.cache_root())
    directory.mkdir(parents=True, exist_ok=True)
    boot = directory / "boot"
    boot.mkdir(exist_ok=True)
    for name in ("host_key", "client_key"):
        if not (directory / name).exists():
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "labgrid-board", "-f",
                            str(directory / name)], check=True, stdin=subprocess.DEVNULL)
    shutil.copyfile(directory / "host_key", boot / "host_key")
    shutil.copyfile(directory / "client_key.pub", boot / "authorized_keys")
    (boot / "sshd_config").write_text(SSHD_CONFIG)
    (boot / "stage2.sh").write_text(BOARD_STAGE2)
    (boot / "hostname").write_text("board\n")
    base = directory / "initrd-base.cpio"
    init = qemu_initrd.init_program(qemu_kernels.cache_root() / "init", profile.build)
    modules = qemu_initrd.module_closure(kernel.tree / "lib" / "modules" / kernel.release, MODULES)
    qemu_initrd.write_initrd(base, init, modules)
    qemu_initrd.with_files(base, boot, "jlboot", directory / "initrd.cpio")
    host_key = (directory / "host_key.pub").read_text().split()[:2]
    (directory / "known_hosts").write_text(f"127.0.0.1 {' '.join(host_key)}\n")
    return Board(kernel.image, directory / "initrd.cpio", directory / "client_key", directory / "known_hosts",
                 kernel_cmdline(profile, "jitterlab.shares=none"), root.image)


def image(board: Board, path: Path, *, hog: bool = False) -> Path:
    """A system image: a copy of the board's root (sparse), with a CPU hog service when `hog`.
    Written with debugfs, so no mount and no root privilege is needed."""
    subprocess.run(["cp", "--sparse=always", str(board.root), str(path)], check=True)
    if hog:
        service = path.with_suffix(".cpu-hog")
        service.write_text(CPU_HOG)
        commands = "\n".join(["mkdir /etc/board.d", "cd /etc/board.d", f"write {service} cpu-hog",
                              "sif /etc/board.d/cpu-hog mode 0100755", "sif /etc/board.d/cpu-hog uid 0",
                              "sif /etc/board.d/cpu-hog gid 0"])
        done = subprocess.run(["debugfs", "-w", "-f", "-", str(path)], input=commands, capture_output=True,
                              text=True)
        service.unlink()
        if done.returncode != 0 or "cpu-hog" not in _ls(path, "/etc/board.d"):
            raise UserError(f"{path}: debugfs could not add {FLASHED}: {done.stderr.strip()[-300:]}")
    return path


def _ls(path: Path, directory: str) -> str:
    return subprocess.run(["debugfs", "-R", f"ls -l {directory}", str(path)], capture_output=True,
                          text=True).stdout


def env_file(path: Path, board: Board, boards: dict[str, tuple[Path, int]]) -> Path:
    """A labgrid environment with one QEMUDriver target per board name: (its first image, the
    loopback port forwarded to its sshd). The images key `disk` is what an image campaign flashes."""
    lines = ["targets:"]
    for name, (_, port) in boards.items():
        lines += [
            f"  {name}:",
            "    resources:",
            "      NetworkService:",
            "        address: 127.0.0.1",
            f"        port: {port}",
            "        username: root",
            "    drivers:",
            "      QEMUDriver:",
            "        qemu_bin: qemu",
            "        machine: virt",
            "        cpu: cortex-a53",
            "        memory: 1024M",
            "        kernel: kernel",
            f"        disk: disk-{name}",
            "        disk_opts: readonly=on",
            f"        boot_args: {board.cmdline}",
            f"        extra_args: -accel tcg -smp 1 -initrd {board.initrd} -device virtio-rng-pci",
            f"        nic: user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:{port}-:22",
            "      SSHDriver:",
            f"        keyfile: {board.client_key}",
            "        connection_timeout: 60.0",
        ]
    lines += ["tools:", "  qemu: qemu-system-aarch64", "images:", f"  kernel: {board.kernel}"]
    lines += [f"  disk-{name}: {disk}" for name, (disk, _) in boards.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def qemu_argv(board: Board, disk: Path, ssh_port: int, serial: str) -> list[str]:
    """The same board as one qemu command line, its serial line on the chardev `serial` (qemu's
    syntax, e.g. "socket,id=s,path=/run/board.sock")."""
    return ["qemu-system-aarch64", "-machine", "virt", "-cpu", "cortex-a53", "-accel", "tcg", "-smp", "1",
            "-m", "1024M", "-nodefaults", "-display", "none", "-kernel", str(board.kernel),
            "-initrd", str(board.initrd), "-append", board.cmdline,
            "-drive", f"if=virtio,format=raw,readonly=on,file={disk}", "-device", "virtio-rng-pci",
            "-nic", f"user,model=virtio-net-pci,restrict=on,hostfwd=tcp:127.0.0.1:{ssh_port}-:22",
            "-chardev", serial, "-serial", f"chardev:{serial.split('id=')[1].split(',')[0]}"]


CAMPAIGN = """\
# An image A/B campaign on jitterlab's emulated arm64 board, booted by labgrid's QEMUDriver
# ({env}): image B runs a CPU hog service at SCHED_FIFO, so B is worse.
# jitterlab run {campaign} --results {results}
[campaign]
name = "labgrid-ab"
repetitions = 3
duration = "1s"
warmup = "60ms"
run_timeout = "120s"

[[target]]
name = "main"
kind = "labgrid"
env = "env.yaml"
cc = "aarch64-linux-gnu-gcc"
images = {{ "A" = "image-A.img", "B" = "image-B.img" }}
known_hosts = "known_hosts"
boot_timeout = "300s"

[matrix]
impl = "c-file"
period = "20ms"
probe = "self"
"""


def write_lab(directory: Path, ssh_port: int) -> tuple[Path, Path]:
    """The board, its two images (B with the CPU hog), a labgrid env file whose QEMUDriver boots
    them (the board's sshd on 127.0.0.1:`ssh_port`) and an image campaign in `directory`:
    (env file, campaign). The campaign's paths are relative: it runs from `directory`."""
    board = prepare(directory)
    a = image(board, directory / "image-A.img")
    image(board, directory / "image-B.img", hog=True)
    env = env_file(directory / "env.yaml", board, {"main": (a, ssh_port)})
    key = (directory / "host_key.pub").read_text().split()[:2]
    with (directory / "known_hosts").open("a") as known:  # ssh names a key of another port so
        known.write(f"[127.0.0.1]:{ssh_port} {' '.join(key)}\n")
    campaign = directory / "ab.toml"
    campaign.write_text(CAMPAIGN.format(env=env.name, campaign=campaign.name, results="results"))
    return env, campaign
