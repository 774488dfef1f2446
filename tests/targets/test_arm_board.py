"""An emulated ARM board end to end: qemu's arm64 `virt` with one CPU, Debian's arm64 kernel, the
board's own Debian root (built once with mmdebstrap, then taken from the cache), reached over SSH
only. One campaign cross-builds a C program against the board's root (c-gpiod), cross-builds a
kernel module on this machine (kmod-hrtimer), maps the PL061's registers through /dev/mem (c-mmap on
gpiomem; the board boots with iomem=relaxed), drives sysfs from python, and watches each pin from
outside the emulator (the emulator probe: qemu's PL061 trace, stamped on this machine) as well as by
the program itself. One more c-gpiod cell is traced (trace = "sched"): its edges, seen from outside,
reach the trace's clock through the program's own toggles (program-log, with the alignment's
residual), and its late periods are explained, marked emulated. The kmod-hrtimer cell probed by
itself is measured under the tunings instead of none, in the same boot and with no run more: the
ones the board's kernel takes are applied around its run and recorded (tuning.json: each file's text
before and after, nothing left to put back), the rest are stored unavailable with the reason
preflight's check gave (the one `run --dry-run` prints). Emulated CPU: the assertions are about
structure and edges, never timing."""

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

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or shutil.which("mmdebstrap") is None,
    reason="qemu-system-arm and mmdebstrap are not installed (scripts/install-deps test)")]

# a slow wave: a quarter period (the pairing window) of 50 ms outlasts the stalls of an emulated CPU
# on a busy machine (vCPU descheduled between the program's timestamp and its write)
PERIOD_NS, DURATION_NS, WARMUP_NS = 200_000_000, 3_000_000_000, 100_000_000
CELLS = {("c-gpiod", "gpiod"), ("kmod-hrtimer", "gpiod"), ("c-mmap", "gpiomem"), ("python", "sysfs")}
TRACED = ("c-gpiod", "gpiod", "emulator")  # the cell also run with trace = "sched"
# the cell measured under the tunings instead of none (no run more): the two the board's kernel
# takes, together in its one run; the others refused at preflight, costing no run (1 CPU, so the
# program is not placed: irq-away has no CPU of the cell's to work on; Debian 12's kernel has no
# isolated partitions; qemu's virt has no cpufreq; a kernel module has no program whose timer slack
# or memory locks could be set)
TUNED = ("kmod-hrtimer", "gpiod", "self")
TUNED_TOGETHER = "cpu-dma-latency+rt-unthrottled"
TUNINGS_TRIED = (TUNED_TOGETHER, "irq-away", "isolated", "governor-performance", "timer-slack", "mlock")


def campaign(path: Path) -> Path:
    path.write_text(f"""[campaign]
name = "arm-board-ci"
repetitions = 1
duration = "{DURATION_NS // 1_000_000}ms"
warmup = "{WARMUP_NS // 1_000_000}ms"
[[target]]
name = "board"
kind = "qemu"
machine = "virt-arm64"
packages = ["mount"]   # tracefs is mounted for the traced run: the board's minimal root has no mount
[pins.sysfs]
chip = "9030000.pl061"
line = 2
[pins.gpiod]
chip = "9030000.pl061"
line = 2
[pins.gpiomem]
soc = "pl061"
line = 2
[probes.emulator]
line = 2
[[matrix]]
impl = "c-gpiod"
pin = "gpiod"
period = "{PERIOD_NS // 1_000_000}ms"
probe = ["self", "emulator"]
[[matrix]]
impl = "kmod-hrtimer"
pin = "gpiod"
period = "{PERIOD_NS // 1_000_000}ms"
probe = "emulator"
[[matrix]]
impl = "c-mmap"
pin = "gpiomem"
period = "{PERIOD_NS // 1_000_000}ms"
probe = ["self", "emulator"]
[[matrix]]
impl = "python"
pin = "sysfs"
period = "{PERIOD_NS // 1_000_000}ms"
probe = "emulator"
[[matrix]]
impl = "{TRACED[0]}"
pin = "{TRACED[1]}"
period = "{PERIOD_NS // 1_000_000}ms"
probe = "{TRACED[2]}"
trace = "sched"
[[matrix]]
impl = "{TUNED[0]}"
pin = "{TUNED[1]}"
period = "{PERIOD_NS // 1_000_000}ms"
probe = "{TUNED[2]}"
tuning = {json.dumps(list(TUNINGS_TRIED))}
""")
    return path


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Store:
    tmp = tmp_path_factory.mktemp("arm-board")
    rc = main(["run", str(campaign(tmp / "arm-board.toml")), "--results", str(tmp / "r"),
               "--timings", str(tmp / "timings.jsonl")])
    assert rc in (0, 1), rc  # 1: a run failed; the tests below say which and why
    return Store(tmp / "r", create=False)


def test_every_cell_ran_on_the_board(results):
    runs = [r for r in results.runs() if r.cell.tuning == "none"]
    seen = {(r.param("impl"), r.param("pin"), r.param("probe"), r.param("trace")): r for r in runs}
    expected = {(i, p, "emulator", None) for i, p in CELLS}
    expected |= {(i, p, "self", None) for i, p in CELLS if i not in ("python", TUNED[0])}  # TUNED: tuned
    expected |= {(*TRACED, "sched")}
    assert len(runs) == len(expected)
    assert set(seen) == expected
    assert {k: f"{r.status}: {r.error}" for k, r in seen.items() if r.status != "ok"} == {}


def test_the_outside_probe_sees_the_programs_wave_edge_for_edge(results):
    for r in (r for r in results.runs() if r.param("probe") == "emulator"):
        key = (r.param("impl"), r.param("pin"))
        assert r.metric("program_pin_watched", "emulator") == 1, key
        assert r.metric("probe_emulated", "emulator") == 1, key
        assert r.metric("probe_resolution_ns", "emulator") == 1000, key
        observed, matched = r.metric("n_edges", "emulator"), r.metric("align_matched_edges", "emulator")
        assert observed is not None and observed >= 3, key
        # a slow wave: every edge the program logged is one the emulator traced, none invented
        assert r.metric("unobserved_edges", "emulator") == 0, key
        assert matched is not None and matched >= observed, key
        warned = [w.message for _, w in results.warnings(r.campaign_id, r.id)]
        assert any("functional evidence" in m for m in warned), (key, warned)


def test_the_board_is_recorded_as_an_emulated_arm_board_with_its_own_root(results):
    infos = [results.sysinfo(r.sysinfo_id).as_json() for r in results.runs()]
    for info in infos:
        assert info["vm_accel"] == "tcg" and info["virtualization"] == "qemu"
        assert info["vm_machine"] == "virt-arm64" and info["vm_machine_cmdline"] == "iomem=relaxed"
        assert info["vm_root"].startswith("Debian ") and " arm64 root (" in info["vm_root"]
        assert info["kernel_release"].endswith("-arm64")


@pytest.mark.skipif(shutil.which("trace-cmd") is None, reason="needs trace-cmd (scripts/install-deps)")
def test_an_outside_probe_on_an_emulated_board_is_explained_through_the_program_log(results):
    [run] = [r for r in results.runs() if r.param("trace") == "sched"]
    assert ex.ATTACHMENT in run.attachments, (run.status, run.error)
    got = ex.Explanation.from_json(json.loads((results.root / run.attachments[ex.ATTACHMENT]).read_text()))
    assert got.refused is None and got.aligned_by == ex.PROGRAM_LOG and got.residual_ns is not None
    assert got.emulated is True and got.events and got.pids
    assert got.periods and any(p.parts for p in got.periods)  # at least one period explained
    for p in got.periods:
        assert sum(part.duration_ns for part in p.parts) + p.remainder_ns == p.lateness_ns


def test_the_tunings_the_board_takes_are_recorded_and_the_rest_unavailable_with_why(results):
    tuned = {r.cell.tuning: r for r in results.runs() if r.cell.tuning != "none"}
    assert set(tuned) == set(TUNINGS_TRIED)
    for name, r in tuned.items():
        print(f"\non the arm64 board: {name}: {r.status} {r.error or ''} ({r.wall_s:.1f} s)")
        assert (r.param("impl"), r.param("pin"), r.param("probe")) == TUNED
    run = tuned.pop(TUNED_TOGETHER)
    assert run.status == "ok", run.error
    applied, problems = read_record((results.root / run.attachments[TUNING_ATTACHMENT]).read_bytes())
    assert problems == [] and [a.tuning for a in applied] == TUNED_TOGETHER.split("+")
    latency, throttling = applied
    [held] = latency.steps
    assert isinstance(held, Held) and held.path == "/dev/cpu_dma_latency"
    assert int(held.before) > 0 and held.during == "0"  # held at 0 µs for the run
    [runtime] = throttling.steps
    assert isinstance(runtime, Changed) and runtime.path == "/proc/sys/kernel/sched_rt_runtime_us"
    assert int(runtime.before) >= 0 and runtime.after == "-1\n"  # Debian's kernel throttles RT by default
    timed = [json.loads(line) for line in (results.root.parent / "timings.jsonl").read_text().splitlines()]
    tuning_s = {p["phase"]: p["end_s"] - p["start_s"] for p in timed if p["phase"].startswith("tuning ")}
    print(f"\non the arm64 board: the tuned run took {run.wall_s:.1f} s, of which applying "
          f"{tuning_s['tuning apply']:.1f} s and restoring {tuning_s['tuning restore']:.1f} s; "
          f"(sched_rt_runtime_us {runtime.before.strip()} -> -1, cpu_dma_latency {held.before} -> 0)")
    for name, r in tuned.items():  # refused by preflight, as --dry-run says it: never a silent "none"
        assert r.status == "unavailable" and TUNING_ATTACHMENT not in r.attachments, name
        assert r.error and r.error.startswith(f"tuning {name} cannot be applied: "), (name, r.error)
    assert "no CPUs of their own" in str(tuned["irq-away"].error)  # 1 CPU and no polling probe: unplaced
    for name in ("timer-slack", "mlock"):
        assert "it does nothing here" in str(tuned[name].error)
