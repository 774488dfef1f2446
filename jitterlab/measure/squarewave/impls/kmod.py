"""The kernel-space impls: kmod-busy, kmod-hrtimer and kmod-rt (jitterlab/programs/kmod/jl_wave.c).

The module is built on the target with kbuild against the running kernel's headers
(/lib/modules/$(uname -r)/build), once per kernel release and before the run's pin and probe start
(prepare: a build takes minutes on a slow board). It is loaded with the run's parameters, read
back through /proc/jl_wave when it says it is done, and unloaded on every path. It drives a real
GPIO line through the kernel's consumer API, so it drives the pins whose handle offers a line the
kernel finds by its chip's label and offset and leaves free for it to request (KernelLine: gpiod;
sysfs holds its line exported).
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

from jitterlab import programs
from jitterlab.measure.context import RunContext
from jitterlab.measure.squarewave.cell import WaveCell
from jitterlab.measure.squarewave.impls.base import IMPLS, PROGRAM_PRIORITY, SELF_LOG, ImplBase, bound
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import Forms, KernelLine
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.programs import ProgramDir
from jitterlab.targets.capabilities import KeepsKernelModules, has

MODULE = "jl_wave"
# shipped as sources: the module is built per kernel release at prepare(), not when deployed
KMOD = programs.declare(ProgramDir("kmod", ("*.c", "Kbuild", "Makefile")))
SOURCES = KMOD.path
# $1: the kmod sources, $2: the build directory (per kernel release); builds unless built
_BUILD = r"""
k=$(uname -r)
[ -f "$2/jl_wave.ko" ] && { echo "$2/jl_wave.ko"; exit 0; }
[ -e /proc/modules ] || { echo "kernel without module support (CONFIG_MODULES)" >&2; exit 3; }
[ -d "/lib/modules/$k/build" ] || { echo "no headers for $k: /lib/modules/$k/build is missing" >&2; exit 4; }
mkdir -p "$2" && cp "$1"/* "$2"/ && make -s -C "$2" >"$2/build.log" 2>&1 ||
  { tail -n 5 "$2/build.log" >&2; exit 5; }
echo "$2/jl_wave.ko"
"""
# a leftover of a killed run still holds the line: unload it first
_UNLOAD = 'grep -q "^jl_wave " /proc/modules && rmmod jl_wave; exit 0'


@dataclass(frozen=True)
class KmodImpl(ImplBase):
    mode: str  # busy | hrtimer | rt
    needs: Forms = (KernelLine,)
    realtime: bool = True  # a kernel thread or hard-irq timer: the RT fallback does not apply

    def tools(self) -> dict[str, str]:
        return {"make": "make", "cc": "gcc", "insmod": "kmod", "rmmod": "kmod", "uname": "coreutils"}

    def programs(self) -> dict[str, str]:
        return {}

    def prepare(self, ctx: RunContext) -> None:
        build(ctx)  # minutes on a slow board: before the probe watches, whose time is bounded

    def run(self, ctx: RunContext, pin: PinHandle) -> str:
        line = bound(ctx, self.needs, pin)
        assert isinstance(line, KernelLine)
        if not line.chip_label or line.line < 0:
            raise RunFailed(f"kmod-{self.mode} drives a real GPIO line; pin {pin.kind!r} names none",
                            status="unavailable")
        target, settings = ctx.target, ctx.settings
        module = build(ctx)
        target.run(["sh", "-c", _UNLOAD])
        name = f"kmod-{self.mode}"
        params = [f"period_ns={WaveCell.of_cell(ctx.cell).period_ns}", f"duration_ns={settings.duration_ns}",
                  f"mode={self.mode}", f'chip="{line.chip_label}"' if " " in line.chip_label else
                  f"chip={line.chip_label}", f"line={line.line}", f"prio={PROGRAM_PRIORITY}", f"impl={name}"]
        loaded = target.run(["insmod", module, *params], timeout_s=60)
        if not loaded.ok:
            raise RunFailed(explain_insmod(loaded.stderr, target), status="unavailable")
        try:
            deadline = time.monotonic() + (settings.duration_ns + settings.run_timeout_ns) / 1e9
            while target.run(["cat", "/proc/jl_wave_state"]).stdout.strip() != "done":
                if time.monotonic() > deadline:
                    raise RunFailed(f"{name} still running after duration + campaign.run_timeout",
                                    status="timeout")
                time.sleep(min(0.1, settings.duration_ns / 1e9 / 10))
            copied = target.run(["sh", "-c", 'cat /proc/jl_wave > "$0"', f"{ctx.scratch}/{SELF_LOG}"])
            if not copied.ok:
                raise RunFailed(f"{name}: cannot read /proc/jl_wave: {copied.stderr.strip()}")
        finally:
            with contextlib.suppress(Exception):
                target.run(["rmmod", MODULE], timeout_s=30)
        return ""


def build(ctx: RunContext) -> str:
    """The module built for the target's running kernel (cached per release); RunFailed
    (unavailable) with the cause and the fix when it cannot be."""
    keeps = has(ctx.target, KeepsKernelModules)  # a target that keeps its modules (qemu)
    if keeps is not None:
        try:
            return keeps.kernel_module(SOURCES, MODULE)
        except UserError as exc:
            raise RunFailed(str(exc), status="unavailable") from None
    release = ctx.target.run(["uname", "-r"]).stdout.strip()
    done = ctx.target.run(["sh", "-c", _BUILD, "sh", f"{ctx.bindir}/{KMOD.name}",
                           f"{ctx.bindir}/{KMOD.name}-{release}"],
                          timeout_s=600)
    if done.ok:
        return done.stdout.strip().splitlines()[-1]
    raise RunFailed(explain_build(done.rc, done.stderr, release), status="unavailable")


def explain_build(rc: int, stderr: str, release: str) -> str:
    said = " ".join(stderr.split())[-300:]
    if rc == 3:
        return "the kernel has no module support (CONFIG_MODULES); the kmod impls cannot run on it"
    if rc == 4:
        return f"no kernel headers for {release}: apt install linux-headers-{release} on the target"
    if "pahole: not found" in said:
        return (f"kernel {release} builds BTF for its modules and needs pahole: apt install dwarves on the "
                "target")
    return f"building the kernel module failed ({said or 'no output'}); check gcc and linux-headers-{release}"


def explain_insmod(stderr: str, target) -> str:
    """Why insmod refused, from what it and the kernel said, with the fix."""
    said = " ".join(stderr.split())
    tail = target.run(["sh", "-c", "dmesg 2>/dev/null | tail -n 3"]).stdout.strip()
    kernel = f" (kernel: {' | '.join(tail.splitlines())})" if tail else ""
    if "Key was rejected" in said or ("Operation not permitted" in said and (
            "lockdown" in tail.lower() or "signature" in tail.lower())):
        return ("the kernel refuses unsigned modules (lockdown or module signature enforcement); sign "
                f"jl_wave.ko with a key the kernel trusts, or boot without lockdown{kernel}")
    if "Operation not permitted" in said:
        return f"loading a kernel module needs root (CAP_SYS_MODULE): run jitterlab as root{kernel}"
    if "Invalid module format" in said or "Exec format error" in said:
        return f"the module does not match the running kernel (rebuild against its headers){kernel}"
    if "No such device" in said:
        return f"no GPIO chip with that label on the target{kernel}"
    if "Device or resource busy" in said:
        return f"the GPIO line is in use (gpioinfo names its consumer){kernel}"
    return f"insmod jl_wave.ko failed: {said or 'no output'}{kernel}"


for _mode, _help in (
    ("busy", "kernel module: a kernel thread toggles the GPIO line and busy-waits (ndelay) between edges"),
    ("hrtimer", "kernel module: an hrtimer callback toggles the GPIO line, absolute expiries, hard irq"),
    ("rt", "kernel module: a SCHED_FIFO kernel thread sleeps on an absolute hrtimeout and toggles"),
):
    IMPLS.add(f"kmod-{_mode}", _help, KmodImpl(_mode))
