"""One qemu process: its command line, its start, the wait for the guest, and its end.

qemu runs under a small launcher (targets.tied) in a session of its own, so Ctrl-C in
the terminal reaches jitterlab, which shuts the guest down in order; and the launcher stops qemu
when jitterlab's end of a pipe closes, which the kernel does also when jitterlab is killed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from jitterlab.targets import tied
from jitterlab.targets.qemu.machines.profile import MachineProfile
from jitterlab.targets.qemu.scripts import FAILED, READY


@dataclass(frozen=True)
class BootSpec:
    """What qemu is asked to run, one boot: the profile and this boot's files, sizes and ports."""

    profile: MachineProfile  # the emulator, the machine, its devices
    image: Path  # the kernel, in the profile's form
    initrd: Path
    append: str  # the kernel command line
    cpus: int
    memory_bytes: int
    accel: str  # "kvm" | "tcg"
    shares: tuple[tuple[str, Path], ...]  # (9p mount tag, directory on this machine), read-only
    ssh_port: int  # on 127.0.0.1, forwarded to the guest's port 22
    console: Path  # the serial console's output
    dtb: Path | None = None  # the device tree, for a machine that takes one
    disk: Path | None = None  # the board's root image, attached read-only as its first virtio disk
    trace: Path | None = None  # where qemu writes the profile's GPIO trace events (host-stamped)
    monitor: Path | None = None  # a QMP socket for probes that read the board's registers (xp)
    devices: tuple[str, ...] = ()  # qemu arguments of devices wired to the board from outside


def _opt(value: object) -> str:
    """A value inside qemu's comma-separated option syntax (a comma is written twice)."""
    return str(value).replace(",", ",,")


def qemu_argv(m: BootSpec) -> list[str]:
    p = m.profile
    dtb = ["-dtb", str(m.dtb)] if m.dtb is not None else []
    argv = [
        p.qemu, "-nodefaults", "-no-user-config", *p.machine_args, *p.accel[m.accel],
        "-smp", str(m.cpus), "-m", f"{m.memory_bytes >> 20}M",
        "-kernel", str(m.image), *dtb, "-initrd", str(m.initrd), "-append", m.append,
        "-display", "none", "-no-reboot",
        "-chardev", f"file,id=console,path={_opt(m.console)}",
    ]  # fmt: skip
    d = p.devices
    argv += [*["-serial", "null"] * d.console_uart, "-serial", "chardev:console"]
    argv += [*d.nic(f"tcp:127.0.0.1:{m.ssh_port}-:22"), *d.rng()]
    if m.disk is not None:
        # read-only, or a scratch copy of qemu's where the device cannot be (an SD card)
        argv += d.disk(f"file={_opt(m.disk)},if=none,format=raw,{d.disk_access}")
    if m.trace is not None and p.traced_gpio is not None:
        # one line per level change, written at once, stamped with this machine's CLOCK_REALTIME
        argv += ["-trace", p.traced_gpio.event, "-msg", "timestamp=on", "-D", str(m.trace)]
    if m.monitor is not None:
        argv += ["-qmp", f"unix:{_opt(m.monitor)},server=on,wait=off"]
    for i, (tag, path) in enumerate(m.shares):
        argv += d.share(i, tag, _opt(path))
    return [*argv, *m.devices]


STOP_GRACE_S = 5.0  # a guest qemu gets to end after SIGTERM (it flushes its disk); then SIGKILL


class VM:
    """A started qemu; stop() (idempotent) ends it and waits for it."""

    def __init__(self, spec: BootSpec, log: Path) -> None:
        self.spec = spec
        self.log = log  # qemu's own messages
        self._qemu = tied.start(qemu_argv(spec), log, STOP_GRACE_S)

    def alive(self) -> bool:
        return self._qemu.alive()

    def wait_ready(self, timeout_s: float) -> tuple[str, float | None]:
        """("ready", guest uptime s) once the guest says so; ("failed", None) when it reported a
        failure or qemu exited; ("timeout", None) after timeout_s."""
        deadline = time.monotonic() + timeout_s
        while True:
            text = self.console_text()
            for line in text.splitlines():
                if line.startswith(READY):
                    words = line.split()
                    return "ready", float(words[1]) if len(words) > 1 else None
                if line.startswith(FAILED):
                    return "failed", None
            if not self.alive():
                return "failed", None
            if time.monotonic() > deadline:
                return "timeout", None
            time.sleep(0.05)

    def console_text(self) -> str:
        try:
            return self.spec.console.read_text(errors="replace")
        except OSError:
            return ""

    def stop(self) -> None:
        self._qemu.stop()
