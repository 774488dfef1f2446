"""The target programs: build, run each impl under the observer, and the log parsers.

Structure only: this runs on small shared VMs, so no timing is ever asserted.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pytest

import jitterlab.programs
from jitterlab import plugins
from jitterlab.measure.squarewave.bindings import pins_driven_by
from jitterlab.measure.squarewave.impls.base import EXIT_UNAVAILABLE
from jitterlab.measure.squarewave.probes.logs import OBSERVER_STATS_KEYS, read_observer, read_self_log
from jitterlab.model.errors import RunFailed
from jitterlab.model.tuning import MLOCK_NEVER, Cpus, launcher, program_flags
from jitterlab.targets.local import LocalTarget
from jitterlab.tunings.base import TUNINGS

PROGRAMS = Path(jitterlab.programs.__file__).parent
C_PROGRAMS = ("observer", "c-file", "c-mmap", "c-fifo", "c-gpiod")
# every registered impl that drives the virtual pin: they all run here without hardware
IMPLS = tuple(e.name for e in plugins.IMPLS if "vpin" in pins_driven_by(e.name))
PERIOD_NS = 20_000_000
DURATION_NS = 300_000_000
PYTHON_FLAGS = plugins.IMPLS.get("python", "impl").command[1:-1]  # as the runner starts it
NO_NODE = pytest.mark.skipif(shutil.which("node") is None, reason="node is not installed")


def _impl_param(impl: str):
    return pytest.param(impl, marks=NO_NODE) if impl == "node" else impl


IMPL_PARAMS = [_impl_param(i) for i in IMPLS]


@pytest.fixture(scope="session")
def built(tmp_path_factory) -> Path:
    """A copy of programs/ built with its own Makefile, as the runner does on a target."""
    dst = tmp_path_factory.mktemp("target") / "programs"
    shutil.copytree(PROGRAMS, dst, ignore=shutil.ignore_patterns("__pycache__", "*.o", *C_PROGRAMS))
    done = subprocess.run(["make", "-C", str(dst / "c")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return dst


def impl_argv(built: Path, impl: str) -> list[str]:
    return {
        "bash": ["bash", str(built / "bash" / "squarewave.sh")],
        "python": [sys.executable, *PYTHON_FLAGS, str(built / "python" / "squarewave.py")],
        "node": ["node", str(built / "node" / "squarewave.js")],
    }.get(impl, [str(built / "c" / impl)])


def wave_flags(pin: Path, log: Path, duration_ns: int = DURATION_NS) -> list[str]:
    return ["--period-ns", str(PERIOD_NS), "--duration-ns", str(duration_ns),
            "--pin", str(pin), "--log", str(log)]  # fmt: skip


@pytest.fixture
def pin(tmp_path) -> Path:
    p = tmp_path / "pin"
    p.write_bytes(b"0\n")
    return p


@contextmanager
def observing(built: Path, pin: Path, tmp: Path):
    out, stats, ready = tmp / "obs.bin", tmp / "obs.json", tmp / "obs.ready"
    argv = [str(built / "c" / "observer"), "--pin", str(pin), "--out", str(out),
            "--stats", str(stats), "--ready", str(ready),
            "--cpu", str(max(os.sched_getaffinity(0))),
            "--max-edges", "100000", "--max-duration-ns", "30000000000"]  # fmt: skip
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "observer never became ready"
            time.sleep(0.005)
        yield out, stats, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0, proc.stderr.read().decode()
        proc.stderr.close()


def assert_wave(levels: np.ndarray) -> None:
    assert len(levels) >= 2
    assert levels[0] == 1
    assert levels[-1] == 0
    assert np.all(levels[1:] != levels[:-1]), "levels do not alternate"


def assert_self_log(log: Path, impl: str) -> None:
    s = read_self_log(log)
    assert s.impl == impl
    assert s.clock == ("realtime" if impl == "bash" else "monotonic")
    assert s.dropped == 0
    assert_wave(s.level)
    assert np.all(np.diff(s.t_ns) > 0), "self timestamps do not strictly increase"


@pytest.mark.parametrize("impl", IMPL_PARAMS)
def test_impl_under_observer(built, pin, tmp_path, impl):
    log = tmp_path / "self.log"
    flags = [*wave_flags(pin, log), *(["--allow-no-rt"] if impl == "c-fifo" else [])]
    with observing(built, pin, tmp_path) as (out, stats, _):
        done = subprocess.run([*impl_argv(built, impl), *flags], capture_output=True, timeout=20)
    assert done.returncode == 0, done.stderr
    assert pin.read_bytes()[:1] == b"0"
    assert pin.stat().st_size == 2, "the pin file was truncated or grew"
    assert_self_log(log, impl)

    cap = read_observer(out, stats)
    assert set(cap.stats) >= OBSERVER_STATS_KEYS
    assert cap.stats["initial_level"] == 0
    assert cap.stats["sched"] in ("fifo", "other")
    assert_wave(cap.level)
    assert np.all(np.diff(cap.t_ns) > 0)
    # The observer can miss edges while blind, never invent them.
    assert len(cap.level) <= len(read_self_log(log).level)
    assert cap.blind.shape == (cap.stats["blind_intervals"] - cap.stats["blind_dropped"], 2)


def test_observer_records_an_edge_made_while_it_was_not_running(built, pin, tmp_path):
    """A stall (a hypervisor, a preempting task) can hide the program's last edge until the stop
    request arrives; the observer's last look at the pin comes after that request, so the edge
    is recorded, at the time it was seen and inside a blind interval that admits the stall."""
    for i in range(5):  # where the stall lands in the poll loop is chance: try several places
        pin.write_bytes(b"0\n")
        (tmp := tmp_path / str(i)).mkdir()
        with observing(built, pin, tmp) as (out, stats, proc):
            proc.send_signal(signal.SIGSTOP)
            pin.write_bytes(b"1\n")
            time.sleep(0.02)
            proc.send_signal(signal.SIGTERM)  # pending while stopped
            proc.send_signal(signal.SIGCONT)
        cap = read_observer(out, stats)
        assert cap.level.tolist() == [1]
        t = int(cap.t_ns[0])
        assert any(a <= t <= b and t - a >= 20_000_000 for a, b in cap.blind.tolist())


@pytest.mark.parametrize("impl", IMPL_PARAMS)
def test_sigterm_mid_run_leaves_a_whole_log(built, pin, tmp_path, impl):
    log = tmp_path / "self.log"
    proc = subprocess.Popen([*impl_argv(built, impl), *wave_flags(pin, log, 60_000_000_000),
                             "--allow-no-rt"], stderr=subprocess.PIPE)  # fmt: skip
    deadline = time.monotonic() + 10
    while pin.read_bytes()[:1] != b"1":  # running: the first edge is out
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.005)
    time.sleep(0.05)
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(10) == 0, proc.stderr.read()
    proc.stderr.close()
    assert pin.read_bytes()[:1] == b"0"
    assert_self_log(log, impl)


@pytest.mark.parametrize("impl", [*IMPL_PARAMS, "observer"])
@pytest.mark.parametrize(
    "bad",
    [["--bogus", "1"], ["--period-ns", "x"], ["--period-ns"], []],
    ids=["unknown", "not-a-number", "no-value", "missing"],
)
def test_bad_flags_exit_2_with_usage(built, pin, tmp_path, impl, bad):
    argv = [str(built / "c" / "observer")] if impl == "observer" else impl_argv(built, impl)
    done = subprocess.run([*argv, *bad], capture_output=True, text=True, timeout=20)
    assert done.returncode == 2
    assert "usage" in done.stderr
    assert pin.read_bytes() == b"0\n"


def test_c_fifo_allow_no_rt_runs_and_warns_at_most_once(built, pin, tmp_path):
    log = tmp_path / "self.log"
    done = subprocess.run([str(built / "c" / "c-fifo"), *wave_flags(pin, log, 50_000_000),
                           "--allow-no-rt", "--prio", "10"],
                          capture_output=True, text=True, timeout=20)  # fmt: skip
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert lines == [] or (
        len(lines) == 1 and lines[0].startswith("warning: c-fifo: SCHED_FIFO refused (")
    )
    assert_self_log(log, "c-fifo")


_FAKE_GPIOD = """
LINE_REQ_DIR_OUT = 3


class _Line:
    def __init__(self, path):
        self.path = path

    def request(self, consumer, type, default_val):
        self.file = open(self.path, "a")

    def set_value(self, value):
        self.file.write(str(value))
        self.file.flush()

    def release(self):
        self.file.close()


class Chip:
    def __init__(self, path):
        self.path = path

    def get_line(self, offset):
        return _Line(self.path)
"""


def test_python_started_without_site_packages_finds_its_gpiod_bindings_there(built, tmp_path):
    """The runner starts python with -S (a faster start); a gpiod pin adds site-packages, where the
    bindings are: here a user site holding a gpiod 1.x stand-in that writes each value to the 'chip'."""
    python = str(Path(sys.base_prefix) / "bin" / "python3")  # a venv's python has no user site
    env = {**os.environ, "PYTHONUSERBASE": str(tmp_path / "userbase")}
    env.pop("PYTHONNOUSERSITE", None)
    where = subprocess.run([python, "-c", "import site; print(site.getusersitepackages())"], env=env,
                           capture_output=True, text=True, check=True).stdout.strip()
    Path(where).mkdir(parents=True)
    (Path(where) / "gpiod.py").write_text(_FAKE_GPIOD)
    without = subprocess.run([python, *PYTHON_FLAGS, "-c", "import gpiod"], env=env, capture_output=True)
    assert without.returncode != 0 and b"No module named 'gpiod'" in without.stderr  # -S leaves it out
    chip, log = tmp_path / "chip", tmp_path / "self.log"
    done = subprocess.run([python, *PYTHON_FLAGS, str(built / "python" / "squarewave.py"), "--period-ns",
                           str(PERIOD_NS), "--duration-ns", str(4 * PERIOD_NS), "--chip", str(chip),
                           "--line", "3", "--log", str(log)], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    levels = read_self_log(log).level
    assert_wave(levels)
    assert chip.read_text() == "".join(str(v) for v in levels)  # every edge went through the bindings


def test_make_clean_removes_the_binaries(built, tmp_path):
    copy = tmp_path / "c"
    shutil.copytree(built / "c", copy)
    subprocess.run(["make", "-C", str(copy), "clean"], check=True, capture_output=True)
    assert not any((copy / p).exists() for p in C_PROGRAMS)


# --- parsers, on synthetic files with known content ---

SELF_LOG = (
    b"# jitterlab-edges v1 clock=monotonic impl=c-fifo\n"
    b"1000 1\n1500 0\n2000 1\n2500 0\n"
    b"# dropped=3\n"
    b"# end edges=4\n"
)


def test_read_self_log_round_trip(tmp_path):
    p = tmp_path / "self.log"
    p.write_bytes(SELF_LOG)
    s = read_self_log(p)
    assert s.t_ns.dtype == np.int64 and s.level.dtype == np.uint8
    assert s.t_ns.tolist() == [1000, 1500, 2000, 2500]
    assert s.level.tolist() == [1, 0, 1, 0]
    assert (s.clock, s.impl, s.dropped) == ("monotonic", "c-fifo", 3)


def test_read_self_log_with_no_edges(tmp_path):
    p = tmp_path / "self.log"
    p.write_bytes(b"# jitterlab-edges v1 clock=realtime impl=bash\n# end edges=0\n")
    assert len(read_self_log(p).t_ns) == 0


def test_a_log_of_a_program_that_only_counts_its_edges(tmp_path):
    p = tmp_path / "self.log"
    p.write_bytes(b"# jitterlab-edges v1 clock=none impl=unit\n# dropped=402\n# end edges=0\n")
    s = read_self_log(p)
    assert (s.timed, s.made, len(s.t_ns), s.impl) == (False, 402, 0, "unit")
    p.write_bytes(b"# jitterlab-edges v1 clock=none impl=unit\n1000 1\n# dropped=1\n# end edges=1\n")
    with pytest.raises(RunFailed, match=r"garbled \(clock=none, yet 1 timestamped edges\)"):
        read_self_log(p)


def test_every_truncation_of_a_self_log_is_refused(tmp_path):
    p = tmp_path / "self.log"
    for n in range(len(SELF_LOG)):
        p.write_bytes(SELF_LOG[:n])
        with pytest.raises(RunFailed, match=str(p)):
            read_self_log(p)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"1500 0", b"15x0 0"),
        (b"1500 0", b"1500 2"),
        (b"1500 0", b"1500  0"),
        (b"1500 0", b"1500 0 7"),
        (b"1500 0\n", b"1500\n"),
        (b"1500 0\n", b"\n"),
        (b"v1", b"v2"),
        (b"clock=monotonic", b"clock=tai"),
        (b"edges=4", b"edges=5"),
        (b"# dropped=3", b"# dropped=three"),
        (b"# end edges=4\n", b"# end edges=4\n9 1\n"),
    ],
)
def test_garbled_self_log_is_refused(tmp_path, old, new):
    p = tmp_path / "self.log"
    p.write_bytes(SELF_LOG.replace(old, new, 1))
    with pytest.raises(RunFailed, match=str(p)):
        read_self_log(p)


def test_missing_self_log_is_refused(tmp_path):
    with pytest.raises(RunFailed, match="missing"):
        read_self_log(tmp_path / "nope.log")


def _capture_bytes(edges: list[tuple[int, int]], blind: list[tuple[int, int]]) -> bytes:
    head = b"JLOBS001" + np.array([len(edges), len(blind)], dtype="<u8").tobytes()
    recs = np.array(edges + blind, dtype="<i8").reshape(-1, 2)
    return head + recs.tobytes()


def _stats(**changes) -> dict:
    s = {k: 0 for k in OBSERVER_STATS_KEYS} | {"sched": "other", "mlock": False, "cpu": -1}
    return s | changes


EDGES = [(100, 1), (200, 0), (300, 1), (400, 0)]
BLIND = [(150, 170)]


@pytest.fixture
def capture_files(tmp_path):
    out, stats = tmp_path / "obs.bin", tmp_path / "obs.json"
    out.write_bytes(_capture_bytes(EDGES, BLIND))
    stats.write_text(json.dumps(_stats(edges=4)))
    return out, stats


def test_read_observer_round_trip(capture_files):
    cap = read_observer(*capture_files)
    assert cap.t_ns.tolist() == [100, 200, 300, 400]
    assert cap.level.tolist() == [1, 0, 1, 0] and cap.level.dtype == np.uint8
    assert cap.blind.tolist() == [[150, 170]] and cap.blind.dtype == np.int64
    assert cap.stats["sched"] == "other"


def test_every_truncation_of_a_capture_is_refused(capture_files):
    out, stats = capture_files
    whole = out.read_bytes()
    for n in range(len(whole)):
        out.write_bytes(whole[:n])
        with pytest.raises(RunFailed, match=str(out)):
            read_observer(out, stats)


@pytest.mark.parametrize(
    "content",
    [
        _capture_bytes(EDGES, BLIND) + b"\0",
        b"JLOBS002" + _capture_bytes(EDGES, BLIND)[8:],
        _capture_bytes([(100, 1), (200, 5)], []),
        _capture_bytes([(200, 1), (100, 0)], []),
        _capture_bytes(EDGES, [(170, 150)]),
    ],
    ids=["trailing-bytes", "magic", "level", "time-backwards", "blind-reversed"],
)
def test_garbled_capture_is_refused(capture_files, content):
    out, stats = capture_files
    out.write_bytes(content)
    with pytest.raises(RunFailed, match=str(out)):
        read_observer(out, stats)


@pytest.mark.parametrize(
    "text",
    ["", '{"polls": 1', "[1, 2]", json.dumps({"polls": 1}), json.dumps(_stats(edges=3))],
    ids=["empty", "truncated", "not-an-object", "missing-keys", "edge-count-mismatch"],
)
def test_bad_stats_are_refused(capture_files, text):
    out, stats = capture_files
    stats.write_text(text)
    with pytest.raises(RunFailed, match=str(stats)):
        read_observer(out, stats)


def _watch(proc: subprocess.Popen, program: str) -> tuple[set[int], set[str]]:
    """What /proc says of the program until it ends, once its launchers have exec'd it: the kB of
    memory it had locked, and its timer slack (ns)."""
    locked_kb, slack_ns = set(), set()
    proc_dir = Path(f"/proc/{proc.pid}")
    while proc.poll() is None:
        with contextlib.suppress(OSError, IndexError, ValueError):
            if (proc_dir / "cmdline").read_bytes().split(b"\0")[0] == program.encode():  # no launcher now
                lines = (proc_dir / "status").read_text().splitlines()
                locked_kb.update(int(line.split()[1]) for line in lines if line.startswith("VmLck:"))
                slack_ns.add((proc_dir / "timerslack_ns").read_text().strip())
        time.sleep(0.01)
    return locked_kb, slack_ns


@pytest.mark.parametrize("impl", IMPL_PARAMS)
def test_the_program_tunings_reach_each_impls_program_or_say_why_not(built, pin, tmp_path, impl):
    """timer-slack and mlock as a run would apply them (tunings/program.py): the program runs with
    a slack of 1 ns and its memory locked where the tuning applies to it, and a program the mlock
    tuning skips because it cannot lock its memory refuses --mlock as unavailable."""
    traits = plugins.IMPLS.get(impl, "test").program
    here = LocalTarget("local", str(tmp_path / "work"))
    cell = Cpus((max(os.sched_getaffinity(0)),))
    skipped = {name: TUNINGS.get(name, "t").skips(traits) for name in ("timer-slack", "mlock")}
    applied = [TUNINGS.get(name, "t").apply(here, cell) for name, why in skipped.items() if why is None]
    if not applied:
        assert traits is not None and traits.realtime  # c-fifo: SCHED_FIFO, and it locks itself
        return
    flags = [*wave_flags(pin, tmp_path / "self.log", duration_ns=1_500_000_000), *program_flags(applied)]
    program = impl_argv(built, impl)
    proc = subprocess.Popen([*launcher(applied), *program, *flags], stderr=subprocess.PIPE)
    locked_kb, slack_ns = _watch(proc, program[0])
    err = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.returncode == 0, err
    assert slack_ns == {"1"}, "the program ran with another timer slack than the tuning's"
    if skipped["mlock"] is None:
        assert max(locked_kb) > 0, "the program never locked its memory"
    else:
        assert traits is not None and traits.mlock == MLOCK_NEVER
        done = subprocess.run([*program, *flags, "--mlock"], capture_output=True, text=True)
        assert done.returncode == EXIT_UNAVAILABLE and "cannot lock its memory" in done.stderr
