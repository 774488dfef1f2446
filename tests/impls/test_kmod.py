"""The kernel-module impls on a fake target: build once per kernel release, insmod with the run's
parameters, read the edges back when done, rmmod on every path; every refusal explained."""

from __future__ import annotations

import pytest

from jitterlab import plugins
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.impls.kmod import _BUILD, SOURCES, build, explain_build, explain_insmod
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import ChipLine, KernelLine, ValueFile
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.targets.base import Completed
from jitterlab.targets.capabilities import KeepsKernelModules
from jitterlab.targets.fake import FakeTarget

PIN = PinHandle("gpiod", (ChipLine("/dev/gpiochip1", 0), KernelLine("jitterlab-vgpio", 0)))


class KeepingTarget(FakeTarget, KeepsKernelModules):
    """A fake target that keeps the kernel modules it built (as a qemu guest does)."""

    def __init__(self, answer) -> None:
        super().__init__()
        self.answer = answer

    def kernel_module(self, sources, name) -> str:
        return self.answer(sources, name)


def target_with(insmod: Completed | None = None, states=("running", "done"), target=None) -> FakeTarget:
    target = target or FakeTarget()
    target.respond(["uname", "-r"], "6.1.0-56-rt-amd64\n")
    target.respond(["sh", "-c", _BUILD], "/b/kmod-6.1.0-56-rt-amd64/jl_wave.ko\n")
    target.respond(["insmod"], response=insmod or Completed((), 0, "", ""))
    answers = iter(states)
    target.respond(["cat", "/proc/jl_wave_state"],
                   response=lambda argv: Completed(tuple(argv), 0, next(answers, "done") + "\n", ""))
    target.respond(["sh", "-c", 'cat /proc/jl_wave > "$0"'], "")
    target.respond(["rmmod"], "")
    target.respond(["sh", "-c"], "")
    return target


def context(target, tmp_path) -> RunContext:
    return RunContext(target, RunSettings(duration_ns=10**9), squarewave_cell("kmod-hrtimer", 1_000_000,
                                                                              pin="gpiod"),
                      0, "/s", tmp_path, "/b", Placement(None, None), True)


def test_a_run_loads_waits_reads_back_and_unloads(tmp_path):
    target = target_with()
    assert plugins.IMPLS.get("kmod-hrtimer", "t").run(context(target, tmp_path), PIN) == ""
    [insmod] = [c for c in target.calls if c[0] == "insmod"]
    assert insmod == ("insmod", "/b/kmod-6.1.0-56-rt-amd64/jl_wave.ko", "period_ns=1000000",
                      "duration_ns=1000000000", "mode=hrtimer", "chip=jitterlab-vgpio", "line=0", "prio=80",
                      "impl=kmod-hrtimer")
    assert target.calls[-1] == ("rmmod", "jl_wave")
    assert [c for c in target.calls if c[:3] == ("sh", "-c", 'cat /proc/jl_wave > "$0"')] == [
        ("sh", "-c", 'cat /proc/jl_wave > "$0"', "/s/self.log")]


def test_a_refused_insmod_is_unavailable_with_the_fix(tmp_path):
    target = target_with(Completed((), 1, "", "insmod: ERROR: could not insert module jl_wave.ko: "
                                   "Operation not permitted"))
    with pytest.raises(RunFailed, match="needs root") as err:
        plugins.IMPLS.get("kmod-rt", "t").run(context(target, tmp_path), PIN)
    assert err.value.status == "unavailable"
    assert not any(c[0] == "rmmod" and len(c) == 2 and c[1] == "jl_wave" for c in target.calls)


def test_a_run_that_never_ends_is_stopped_and_the_module_unloaded(tmp_path):
    target = target_with(states=("running",) * 10_000)
    settings = RunSettings(duration_ns=10_000_000, run_timeout_ns=50_000_000)
    ctx = RunContext(target, settings, squarewave_cell("kmod-busy", 1_000_000, pin="gpiod"), 0, "/s",
                     tmp_path, "/b", Placement(None, None), True)
    with pytest.raises(RunFailed, match="still running") as err:
        plugins.IMPLS.get("kmod-busy", "t").run(ctx, PIN)
    assert err.value.status == "timeout" and target.calls[-1] == ("rmmod", "jl_wave")


def test_a_pin_without_a_real_line_is_refused(tmp_path):
    kmod = plugins.IMPLS.get("kmod-rt", "t")
    with pytest.raises(RunFailed, match="cannot drive pin 'vpin': it needs a GPIO line the kernel") as err:
        kmod.run(context(target_with(), tmp_path), PinHandle("vpin", (ValueFile("/dev/shm/p"),)))
    assert err.value.status == "unavailable"
    with pytest.raises(RunFailed, match="drives a real GPIO line; pin 'gpiod' names none"):
        kmod.run(context(target_with(), tmp_path), PinHandle("gpiod", (KernelLine("", -1),)))


@pytest.mark.parametrize(
    ("rc", "stderr", "expected"),
    [
        (3, "", "no module support"),
        (4, "no headers for 6.1.0-56-amd64", "apt install linux-headers-6.1.0-56-amd64 on the target"),
        (5, "jl_wave.c:12: error: implicit declaration", "building the kernel module failed (jl_wave.c:12"),
        (5, "  BTF [M] jl_wave.ko\n/bin/sh: 1: pahole: not found\nmake[3]: *** Error 127",  # a 6.12 kernel
         "needs pahole: apt install dwarves on the target"),
    ],
)
def test_build_failures(rc, stderr, expected):
    assert expected in explain_build(rc, stderr, "6.1.0-56-amd64")


@pytest.mark.parametrize(
    ("stderr", "dmesg", "expected"),
    [
        ("insmod: ERROR: could not insert module: Operation not permitted",
         "Lockdown: insmod: unsigned module loading is restricted", "refuses unsigned modules"),
        ("insmod: ERROR: could not insert module: Key was rejected by service",
         "module verification failed: signature", "refuses unsigned modules"),
        ("insmod: ERROR: could not insert module: Invalid module format", "version magic", "does not match"),
        ("insmod: ERROR: could not insert module: No such device", "jl_wave: cannot request line",
         "no GPIO chip with that label"),
        ("insmod: ERROR: could not insert module: Device or resource busy", "", "in use"),
    ],
)
def test_insmod_refusals(stderr, dmesg, expected):
    target = FakeTarget()
    target.respond(["sh", "-c"], dmesg)
    said = explain_insmod(stderr, target)
    assert expected in said and (not dmesg or dmesg in said)


def test_prepare_builds_the_module_before_the_run(tmp_path):
    target = target_with()
    plugins.IMPLS.get("kmod-hrtimer", "t").prepare(context(target, tmp_path))
    assert [c[:3] for c in target.calls] == [("uname", "-r"), ("sh", "-c", _BUILD)]


def test_a_target_that_keeps_kernel_modules_is_asked_instead(tmp_path):
    """A qemu guest forgets what it built at every boot and builds for minutes: it builds the
    module once per kernel and keeps it, so the impl asks it rather than running kbuild."""
    asked = []

    def kernel_module(sources, name):
        asked.append((sources, name))
        return "/w/modules/jl_wave/jl_wave.ko"

    target = target_with(target=KeepingTarget(kernel_module))
    ctx = context(target, tmp_path)
    assert build(ctx) == "/w/modules/jl_wave/jl_wave.ko"
    assert asked == [(SOURCES, "jl_wave")] and (SOURCES / "jl_wave.c").is_file()
    assert not [c for c in target.calls if c[:3] == ("sh", "-c", _BUILD)]

    def cannot(sources, name):
        raise UserError("target 'vm' (qemu, kernel 6.1.0-56-amd64): cannot build jl_wave.ko: x")

    target.answer = cannot
    with pytest.raises(RunFailed, match="cannot build jl_wave.ko") as err:
        build(ctx)
    assert err.value.status == "unavailable"
