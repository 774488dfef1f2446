"""Real GPIO code paths on real Debian kernels: one campaign boots the standard and the PREEMPT_RT
kernel with the virtual GPIO chip (jl-vgpio: line 0 drives line 1) and runs every impl on the pins
it can drive there — sysfs for bash, python, node and c-file; the character device for c-gpiod,
python's gpiod bindings and the three kernel modules (built in the guest with kbuild, loaded,
unloaded) — seen by the programs themselves and by the gpio-loopback probe on line 1 (kernel edge
timestamps). The same campaign runs the kernel's own tracers (rtla timerlat, osnoise), which
only the RT kernel has, and a traced run (trace = "sched") on each kernel: the guest records its own
trace, the trace file is made here, and the run's late periods are explained on the guest's clock,
marked emulated. On the standard kernel that traced run is measured under every machine tuning a
6.1 kernel takes, together (no run more): each is applied, recorded in the run's tuning.json and
restored. The PREEMPT_RT guest's traced run is measured without a tuning: with all of them, that
guest stopped answering twice (once in the suite, once in 3 runs on a host loaded by stress-ng),
and never when they were split over two guests (16 runs); the cause is not found. Emulated CPUs:
the assertions are about structure and counts, never timing.

gpiomem (memory-mapped SoC registers) has no SoC to map in a VM; its register maps are tested
against a fake register file in tests/pins."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution.tuning import ATTACHMENT as TUNING_ATTACHMENT
from jitterlab.execution.tuning import read_record
from jitterlab.model import explanation as ex
from jitterlab.model.tuning import Changed, Held
from jitterlab.store.catalog import Store
from jitterlab.tracing import reader

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None,
    reason="qemu-system-x86 is not installed (scripts/install-deps test)")]

# 1.5 s at 50 ms: 30 periods, of which a slow emulated guest on a busy machine still makes the 3
# edges a run needs after its warm-up; bash's table runs 3 s (forking `sleep` every half period, it
# made 4 edges in 1.2 s in one run of the suite); the kernel's tracers run whole seconds, osnoise
# three of its 1 s periods
PERIOD_NS, DURATION_NS, WARMUP_NS = 50_000_000, 1_500_000_000, 100_000_000
BASH_PERIOD_NS, BASH_DURATION_NS = 200_000_000, 3_000_000_000  # a shell: slow in an emulated guest
SYSFS_IMPLS = ["bash", "python", "node", "c-file"]
GPIOD_IMPLS = ["c-gpiod", "python", "kmod-busy", "kmod-hrtimer", "kmod-rt"]
LOOPBACK = {("bash", "sysfs"), ("c-file", "sysfs"), ("c-gpiod", "gpiod"), ("kmod-hrtimer", "gpiod")}
RT_ONLY = ["c-gpiod", "kmod-busy", "kmod-hrtimer", "kmod-rt"]  # the RT kernel: the kernel-space models
# the standard guest's traced run's tuning: all a 6.1 guest takes (isolated needs 6.2,
# governor-performance cpufreq); the RT guest's traced run has none (the module's docstring)
TUNED_TOGETHER = "irq-away+cpu-dma-latency+rt-unthrottled+timer-slack+mlock"
TUNED_KERNELS = ("standard",)


def campaign(path: Path) -> Path:
    path.write_text(f"""[campaign]
name = "vm-pins"
repetitions = 1
duration = "{DURATION_NS // 1_000_000}ms"
warmup = "{WARMUP_NS // 1_000_000}ms"
# an emulated guest's rtla at FIFO 95 on a machine loaded 5x its CPUs took over 20 s to end
run_timeout = "120s"
[campaign.cpus]
program = "1"   # a CPU of the program's own: what irq-away moves the guest's IRQs off
[[target]]
name = "standard"
kind = "qemu"
kernel = "standard"
gpio = "virtual"
[[target]]
name = "rt"
kind = "qemu"
kernel = "rt"
gpio = "virtual"
[[matrix]]
impl = {SYSFS_IMPLS[1:]}
pin = "sysfs"
period = "{PERIOD_NS // 1_000_000}ms"
probe = ["self", "gpio-loopback"]
[[matrix]]
impl = "bash"
pin = "sysfs"
period = "{BASH_PERIOD_NS // 1_000_000}ms"
probe = ["self", "gpio-loopback"]
duration = "{BASH_DURATION_NS // 1_000_000}ms"
[[matrix]]
impl = {GPIOD_IMPLS}
pin = "gpiod"
period = "{PERIOD_NS // 1_000_000}ms"
probe = ["self", "gpio-loopback"]
[[exclude]]
probe = "gpio-loopback"
impl = ["python", "node", "kmod-busy", "kmod-rt"]
[[exclude]]
target = "rt"
impl = ["bash", "python", "node", "c-file"]
[[matrix]]
impl = "c-mmap"
period = "{PERIOD_NS // 1_000_000}ms"
probe = "self"   # a polling vpin is blind most of the time in an emulated guest
trace = "sched"
tuning = ["none", "{TUNED_TOGETHER}"]
[[exclude]]
target = "rt"
tuning = "{TUNED_TOGETHER}"
[[exclude]]
target = "standard"
impl = "c-mmap"
tuning = "none"
[[matrix]]
benchmark = "timerlat"
period = "1ms"
duration = "1s"
[[matrix]]
benchmark = "osnoise"
runtime = "900ms"
duration = "3s"   # osnoise's periods are 1 s: in 1 s on a busy host rtla once printed no CPU row
[pins.sysfs]
chip = "jl-vgpio"
line = 0
[pins.gpiod]
chip = "jl-vgpio"
line = 0
[probes.gpio-loopback]
chip = "jl-vgpio"
line = 1
""".replace("'", '"'))
    return path


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Store:
    tmp = tmp_path_factory.mktemp("vm-pins")
    rc = main(["run", str(campaign(tmp / "vm-pins.toml")), "--results", str(tmp / "r")])
    store = Store(tmp / "r", create=False)
    assert rc in (0, 1), rc  # 1: a run failed; the tests below say which and why
    return store


def squarewaves(results: Store) -> list:
    """The runs driving a GPIO pin (the traced run, on the vpin, has tests of its own)."""
    return [r for r in results.runs() if r.benchmark == "squarewave" and r.param("trace") is None]


def traced(results: Store) -> dict:
    """The traced run of each kernel, by target."""
    return {r.target: r for r in results.runs() if r.param("trace") == "sched"}


def test_every_impl_drives_its_pin_on_both_kernels(results):
    runs = squarewaves(results)
    seen = {(r.target, r.param("impl"), r.param("pin"), r.param("probe")): r for r in runs}
    expected = {("standard", i, "sysfs", "self") for i in SYSFS_IMPLS}
    expected |= {(t, i, "gpiod", "self") for i in GPIOD_IMPLS for t in ("standard", "rt")
                 if t == "standard" or i in RT_ONLY}
    expected |= {(t, i, p, "gpio-loopback") for i, p in LOOPBACK for t in ("standard", "rt")
                 if t == "standard" or i in RT_ONLY}
    assert set(seen) == expected
    bad = {k: f"{r.status}: {r.error}" for k, r in seen.items() if r.status != "ok"}
    assert bad == {}
    for r in runs:  # measured, and no edges from nowhere (how many: the emulated CPU's speed)
        periods = r.metric("n_periods", r.param("probe"))
        assert periods is not None and periods >= 1, (r.target, r.param("impl"), r.param("probe"), periods)
        # periods overlap (one starts at every edge): at most two per nominal period measured
        assert periods <= 2 * (r.settings.duration_ns - WARMUP_NS) // int(r.param("period")) + 2
    # each table's runs lasted its own duration: bash's 3 s, the others the campaign's
    assert {(r.param("impl") == "bash", r.settings.duration_ns) for r in runs} == {
        (True, BASH_DURATION_NS), (False, DURATION_NS)}


def test_the_loopback_probe_sees_the_line_the_program_drives(results):
    for r in (r for r in squarewaves(results) if r.param("probe") == "gpio-loopback"):
        own = r.metric("n_edges", "self")
        observed = r.metric("n_edges", "gpio-loopback")
        assert own is not None and observed is not None and observed >= 3  # a run needs 3 edges
        # every edge the program made is seen, or counted as unobserved: none is invented
        assert observed <= own + 1 and r.metric("unobserved_edges", "gpio-loopback") is not None


def test_the_rt_kernel_is_preempt_rt_and_both_say_how_they_ran(results):
    infos = {r.target: results.sysinfo(r.sysinfo_id).as_json() for r in results.runs()}
    assert "PREEMPT_RT" in infos["rt"]["kernel_version"]
    assert "PREEMPT_RT" not in infos["standard"]["kernel_version"]
    assert all(i["vm_accel"] in ("kvm", "tcg") and i["vm_boot_s"] > 0 for i in infos.values())


def test_the_kernel_modules_are_unloaded_and_the_pins_released(results):
    # a run that left its module loaded or its line requested would make the next one fail busy:
    # the kmod and c-gpiod runs of each kernel share line 0 one after another, and all are ok
    kmods = [r for r in squarewaves(results) if r.param("impl").startswith("kmod-")]
    assert len(kmods) == 8 and {r.status for r in kmods} == {"ok"}


def test_the_kernels_own_tracers_run_on_the_rt_kernel_and_are_unavailable_on_the_standard(results):
    tracers = {(r.target, r.benchmark): r for r in results.runs() if r.benchmark in ("timerlat", "osnoise")}
    assert set(tracers) == {(t, b) for t in ("standard", "rt") for b in ("timerlat", "osnoise")}
    for benchmark, metric in (("timerlat", "irq_latency_max_ns"), ("osnoise", "noise_max_ns")):
        rt = tracers[("rt", benchmark)]
        assert rt.status == "ok" and rt.metric(metric) is not None, rt.error
        standard = tracers[("standard", benchmark)]  # Debian's standard kernel has no such tracer
        assert standard.status == "unavailable" and "CONFIG_" in (standard.error or ""), standard.error


def test_one_traced_run_on_each_kernel(results):
    runs = [r for r in results.runs() if r.param("trace") is not None]
    assert sorted((r.target, r.param("impl"), r.param("trace")) for r in runs) == [
        ("rt", "c-mmap", "sched"), ("standard", "c-mmap", "sched")]
    assert {r.target: f"{r.status}: {r.error}" for r in runs if r.status != "ok"} == {}


@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (scripts/install-deps)")
@pytest.mark.parametrize("kernel", ["standard", "rt"])
def test_a_guest_traces_its_run_and_its_late_periods_are_explained(results, kernel):
    run = traced(results)[kernel]
    assert ex.ATTACHMENT in run.attachments and ex.TRACE_FILE in run.attachments, (run.status, run.error)
    got = ex.Explanation.from_json(json.loads((results.root / run.attachments[ex.ATTACHMENT]).read_text()))
    assert got.refused is None and got.aligned_by == ex.DIRECT and got.emulated is True and got.pids
    events = reader.read(results.root / run.attachments[ex.TRACE_FILE])
    assert got.events == len(events) > 0
    assert got.periods  # an emulated guest is late somewhere: each late period explained
    for p in got.periods:
        assert sum(part.duration_ns for part in p.parts) + p.remainder_ns == p.lateness_ns
    assert any(p.parts for p in got.periods)  # the trace covers them: not all remainder


def test_the_traced_run_of_each_kernel_ran_under_every_tuning_it_takes(results):
    runs = traced(results)
    assert runs["rt"].cell.tuning == "none" and TUNING_ATTACHMENT not in runs["rt"].attachments
    for kernel, run in ((k, runs[k]) for k in TUNED_KERNELS):
        assert run.cell.tuning == TUNED_TOGETHER and TUNING_ATTACHMENT in run.attachments, (kernel, run.error)
        applied, problems = read_record((results.root / run.attachments[TUNING_ATTACHMENT]).read_bytes())
        assert problems == [], (kernel, problems)  # every step put back
        assert [a.tuning for a in applied] == TUNED_TOGETHER.split("+"), kernel
        did = {a.tuning: a for a in applied}
        assert did["irq-away"].changed and all(
            c.path.startswith("/proc/irq/") for c in did["irq-away"].changed), kernel  # IRQs moved off
        [held] = did["cpu-dma-latency"].steps
        assert isinstance(held, Held) and held.during == "0", kernel
        [runtime] = did["rt-unthrottled"].steps
        assert isinstance(runtime, Changed) and runtime.after == "-1\n", kernel
        assert did["timer-slack"].launcher and did["mlock"].flags, kernel  # reached the program
        print(f"\n{kernel} kernel: {TUNED_TOGETHER}: {len(did['irq-away'].changed)} IRQ files moved, "
              f"refused: {[r.path for a in applied for r in a.refused]}")
