"""Helpers shared by the tests: what runs on this machine (read from /proc), polling, campaigns
(parsed, or run through `jitterlab run` on the local target), the metrics a run stored, checks any
target must pass, and the loopback sshd and ssh keys of the ssh and labgrid tests.

Processes are only ever found by our own markers (a workdir in their argv, a process group we started,
the sweep marker naming this test process): other people's processes run on this machine too.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest

from jitterlab.campaign.file import Campaign, parse_campaign
from jitterlab.cli.main import main
from jitterlab.model.records import Metric, RunRecord
from jitterlab.store.catalog import Store
from jitterlab.targets.base import CommandTimeout
from jitterlab.targets.processes import MARKER_VAR, new_marker
from jitterlab.targets.ssh.loopback_sshd import LoopbackSSHD, _keygen

T = TypeVar("T")

# --- processes on this machine -------------------------------------------------------------------


def _live() -> Iterator[tuple[int, str, list[str]]]:
    """(pid, comm, the /proc/pid/stat fields after comm) of every live (non-zombie) process."""
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            head, _, tail = Path(f"/proc/{name}/stat").read_text().rpartition(")")
            fields = tail.split()
            if fields[0] in ("Z", "X"):
                continue
        except (OSError, IndexError):
            continue
        yield int(name), head.split("(", 1)[1], fields


def group_members(pgid: int) -> list[int]:
    """Live processes of a process group."""
    return [pid for pid, _, fields in _live() if int(fields[2]) == pgid]


def group_alive(pgid: int) -> bool:
    """A live process in the group."""
    return bool(group_members(pgid))


def group_commands(pgid: int) -> list[str]:
    """comm of every live process in a process group."""
    return [comm for _, comm, fields in _live() if int(fields[2]) == pgid]


def processes_mentioning(marker: str) -> list[str]:
    """Command lines of live processes (this one excepted) whose argv mentions `marker`: the workdir
    is in every argv we start (programs, observer, and stress-ng's --yaml path, which its forked
    workers inherit)."""
    found = []
    for pid, _, _ in _live():
        if pid == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if marker in cmdline:
            found.append(cmdline)
    return found


def spawned_by_us() -> list[int]:
    """Live processes this test process spawned through the sweep (their marker names it)."""
    me = f"{MARKER_VAR}={new_marker().rsplit('~', 1)[0]}~".encode()
    found = []
    for pid, _, _ in _live():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes()
        except OSError:
            continue
        if me in environ:
            found.append(pid)
    return found


def eventually(check: Callable[[], T], timeout_s: float = 15.0, interval_s: float = 0.05) -> T:
    """The value of check() once it is falsy (what is left), polling up to timeout_s."""
    deadline = time.monotonic() + timeout_s
    while (left := check()) and time.monotonic() < deadline:
        time.sleep(interval_s)
    return left


def wait_gone(marker: str, timeout_s: float = 15.0) -> list[str]:
    """The processes mentioning `marker` still alive after waiting up to timeout_s for them to go."""
    return eventually(lambda: processes_mentioning(marker), timeout_s, interval_s=0.1)


# --- campaigns ----------------------------------------------------------------------------------


def campaign_from_toml(benchmark: str, matrix: str = "", **campaign: object) -> Campaign:
    """A campaign parsed from the text of a c.toml: [campaign] name = "t" and `campaign`, then
    [matrix] with the benchmark and `matrix` (TOML lines)."""
    settings = "".join(f"{key} = {json.dumps(value)}\n" for key, value in campaign.items())
    text = f'[campaign]\nname = "t"\n{settings}[matrix]\nbenchmark = "{benchmark}"\n{matrix}\n'
    return parse_campaign(tomllib.loads(text), Path("c.toml"), text)


def campaign_from_dict(benchmark: str, matrix: dict, target: dict | None = None) -> Campaign:
    """A campaign "t" parsed from data as c.toml would hold it: the matrix, and one target if given."""
    data: dict = {"campaign": {"name": "t"}, "matrix": {"benchmark": benchmark, **matrix}}
    if target:
        data["target"] = [target]
    return parse_campaign(data, Path("c.toml"))


def local_campaign(tmp_path: Path, matrix: str, *, workdir: Path | None = None, file: str = "c.toml",
                   **campaign: object) -> Path:
    """A campaign file in tmp_path: [campaign] with `campaign` (repetitions = 1 unless given; None
    leaves a key out), the local target in `workdir` (tmp_path/target), then `matrix`, its [matrix]
    or [[matrix]] tables."""
    settings = {"repetitions": 1, **campaign}
    lines = ["[campaign]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in settings.items() if value is not None]
    lines += ["[[target]]", 'name = "local"', 'kind = "local"']
    lines += [f"workdir = {json.dumps(str(workdir or tmp_path / 'target'))}", matrix.strip(), ""]
    path = tmp_path / file
    path.write_text("\n".join(lines))
    return path


def run_local_campaign(tmp_path: Path, matrix: str, **options) -> tuple[int, Store]:
    """`jitterlab run` of local_campaign(tmp_path, matrix, **options) into tmp_path/results:
    its exit status and the store."""
    path = local_campaign(tmp_path, matrix, **options)
    rc = main(["run", str(path), "--results", str(tmp_path / "results")])
    return rc, Store(tmp_path / "results", create=False)


# --- stored metrics ------------------------------------------------------------------------------


def imported_store(root: Path, images: Iterable[str], *extra: str) -> Path:
    """A results directory `root`/r of one synthetic capture (1 ms, 200 edges) imported once per
    value of `images` as --label image=VALUE (`extra`: more import options); returns its path."""
    from jitterlab.analysis.synthetic import square_wave

    t, level = square_wave(1_000_000, 200, jitter_ns=1000, seed=1)
    capture = root / "cap.csv"
    capture.write_text("".join(f"{a},{b}\n" for a, b in zip(t, level, strict=True)))
    for image in images:
        assert main(["import", "edges", str(capture), "--period", "1ms", "--results", str(root / "r"),
                     "--label", f"image={image}", *extra]) == 0
    return root / "r"


def own_metrics(run: RunRecord) -> list[Metric]:
    """The metrics the benchmark measured (the load's, load_*, left out)."""
    return [m for m in run.metrics.values() if not m.name.startswith("load_")]


def units_and_directions(run: RunRecord, *names: str, probe: str = "") -> dict[str, tuple[str, str]]:
    """{name: (unit, direction)} of the named metrics of `probe`, or of all own_metrics when none
    is named."""
    if not names:
        return {m.name: (m.unit, m.direction) for m in own_metrics(run)}
    return {name: (run.metrics[(probe, name)].unit, run.metrics[(probe, name)].direction) for name in names}


def undeclared(bench, cell, metrics: Iterable[Metric]) -> list[str]:
    """The names among `metrics` that `bench` does not declare for `cell` (Benchmark.metric_names)."""
    return sorted({m.name for m in metrics} - bench.metric_names(cell))


def hold_to_declared(monkeypatch) -> list[str]:
    """Make every registered benchmark's execute() and analyse() check the metrics they hand back
    against what the benchmark declares for the run's cell; returns the list each name it did not
    declare is added to (as "benchmark: name"), for the caller to assert empty."""
    from jitterlab import plugins
    from jitterlab.measure.benchmarks.base import Measurement

    found: list[str] = []

    def checked(original):
        def method(self, ctx, *rest):
            out = original(self, ctx, *rest)
            if isinstance(out, Measurement):
                found.extend(f"{ctx.cell.benchmark}: {n}" for n in undeclared(self, ctx.cell, out.metrics))
            return out
        return method

    for cls in {type(entry.obj) for entry in plugins.BENCHMARKS}:
        for name in ("execute", "analyse"):
            monkeypatch.setattr(cls, name, checked(getattr(cls, name)))
    return found


def check_described(run: RunRecord) -> None:
    """The run measured something, and each of its metrics has a unit and a direction."""
    own = own_metrics(run)
    assert own, run.metrics
    for metric in own:
        assert metric.unit and metric.direction in ("lower", "higher", "none"), metric


# --- targets -------------------------------------------------------------------------------------


def put_and_get_a_tree(target, tmp_path: Path) -> Path:
    """Put a tree and a file on the target, get both back and check their bytes: the local directory
    they came back to."""
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.txt").write_text("a")
    (src / "sub" / "b.bin").write_bytes(b"\0\1")
    remote = f"{target.workdir}/deep/tree"
    target.put(src, remote)
    target.put(src / "a.txt", f"{target.workdir}/new/dir/a.txt")
    assert target.run(["cat", f"{remote}/sub/b.bin"]).stdout == "\0\1"
    back = tmp_path / "back"
    target.get(f"{target.workdir}/new/dir/a.txt", back / "one" / "a.txt")
    target.get(remote, back / "tree")
    assert (back / "one" / "a.txt").read_text() == "a"
    assert (back / "tree" / "sub" / "b.bin").read_bytes() == b"\0\1"
    return back


def check_signal_and_wait(target, timeout_s: float) -> None:
    """SIGINT reaches a spawned program (not ignored, as `cmd &` would leave it), wait() returns its
    status, and a signal to a process that exited is a no-op."""
    proc = target.spawn(["sleep", "100"])
    with pytest.raises(CommandTimeout):
        proc.wait(0.05)
    proc.signal(signal.SIGINT)
    assert proc.wait(timeout_s) == -signal.SIGINT
    proc.signal(signal.SIGINT)  # exited: a no-op
    proc.stop()


@contextlib.contextmanager
def running_sshd(root: Path) -> Iterator[LoopbackSSHD]:
    """A loopback sshd with its keys and known_hosts in root, stopped on exit."""
    server = LoopbackSSHD(root).start()
    try:
        yield server
    finally:
        server.stop()


def new_ssh_key(path: Path) -> Path:
    """A new ed25519 key pair without a passphrase: path and path.pub."""
    _keygen(path)
    return path


def free_port(kind: int = socket.SOCK_DGRAM) -> int:
    """A loopback port nothing uses right now (UDP by default), so tests do not collide with
    other programs on a shared machine, nor with each other."""
    with socket.socket(socket.AF_INET, kind) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# --- traced runs ---------------------------------------------------------------------------------

US = 1_000


def explained_period(index: int, due_ns: int, task_ns: int, irq_ns: int, uncovered_ns: int, *,
                     pid: int = 812, spans: bool = True):
    """An ExplainedPeriod whose lateness is `task_ns` of stress-ng-cpu [SCHED_OTHER] (pid `pid`)
    preempting the program, then `irq_ns` of IRQ 11 virtio0, then `uncovered_ns` the trace does not
    cover; its spans (CPU 1) in that order, where asked."""
    from jitterlab.model.explanation import WORST, ExplainedPeriod, Part, Span, Who

    task = Who(kind="task", text=f"stress-ng-cpu [SCHED_OTHER nice 0] pid {pid}", comm="stress-ng-cpu",
               pid=pid, policy="SCHED_OTHER", priority=0)
    irq = Who(kind="irq", text="IRQ 11 virtio0", irq=11, irq_name="virtio0")
    a, b = due_ns + task_ns, due_ns + task_ns + irq_ns
    end = b + uncovered_ns
    return ExplainedPeriod(
        index=index, due_ns=due_ns, edge_ns=end, chosen=WORST,
        parts=(Part(cause="wakeup", duration_ns=task_ns, who=task),
               Part(cause="irq", duration_ns=irq_ns, who=irq)),
        remainder_ns=uncovered_ns,
        spans=(Span(start_ns=due_ns, end_ns=a, cpu=1, cause="wakeup", who=task),
               Span(start_ns=a, end_ns=b, cpu=1, cause="irq", who=irq),
               Span(start_ns=b, end_ns=end, cpu=1)) if spans else None)


def explained_store(root: Path, *, emulated: bool = False) -> Path:
    """A results directory `root`/r of campaign "why" on target "board" (a kvm VM with 2 CPUs, none
    isolated): c-mmap 1ms under cpu, two traced runs (aaa111, bbb222) whose explained periods hold
    700 µs of stress-ng-cpu, 200 µs of IRQ 11 and 100 µs not covered for each 1 ms of lateness (so
    70 % / 20 % / 10 % in either run and in the cell), with a trace.dat; c-mmap 1ms idle untraced
    (ccc333); c-fifo 1ms under cpu traced, its explanation refused (ddd444). `emulated`: the
    explanations say so."""
    from dataclasses import replace

    import numpy as np

    from jitterlab.analysis.squarewave import squarewave_metrics
    from jitterlab.model.explanation import ATTACHMENT, DIRECT, TRACE_FILE, Explanation
    from jitterlab.model.facts import SystemFacts
    from jitterlab.model.fakes import run_record, squarewave_cell
    from jitterlab.model.records import Cell
    from jitterlab.model.series import EdgeSeries

    def traced(cell: Cell) -> Cell:  # as a campaign's trace = "sched" makes it
        return replace(cell, params=(*cell.params, ("trace", "sched")))

    ms = 1_000_000
    store = Store(root / "r")
    cid = store.new_campaign("why", "fp", "why.toml", "", {})
    sid = store.add_sysinfo(cid, "board", SystemFacts(n_cpus=2, isolcpus=(), virtualization="kvm"))
    t = np.arange(400, dtype=np.int64) * (ms // 2) + 5_000_000_000
    t[301:] += ms  # period 280 (index 279 after the warm-up) is 1 ms late
    level = (np.arange(400) % 2).astype(np.uint8)
    metrics = squarewave_metrics(t, level, ms, warmup_ns=10 * ms, probe="vpin")
    due = int(t[301]) - ms  # the late edge's due time
    periods = {"aaa111": (explained_period(279, due, 700 * US, 200 * US, 100 * US, pid=812),
                          explained_period(12, due - 268 * ms, 350 * US, 100 * US, 50 * US, pid=812,
                                           spans=False)),
               "bbb222": (explained_period(279, due, 700 * US, 200 * US, 100 * US, pid=913),)}
    for rep, (run_id, explained) in enumerate(periods.items()):
        e = Explanation(aligned_by=DIRECT, residual_ns=0, events=12_345, lost_events=0, program_cpus=(1,),
                        pids=(700 + rep,), emulated=emulated, periods=explained)
        store.commit_run(run_record(traced(squarewave_cell("c-mmap", ms, load="cpu")), id=run_id,
                                    campaign_id=cid,
                                    repetition=rep, settings={"warmup_ns": 10 * ms}, sysinfo_id=sid,
                                    metrics=metrics),
                         series={"vpin": EdgeSeries(t, level)},
                         files={ATTACHMENT: json.dumps(e.as_json()).encode(),
                                TRACE_FILE: b"not a real trace"})
    refused = Explanation(refused="no mapping between the probe's edges and the trace (no program log)")
    store.commit_run(run_record(traced(squarewave_cell("c-fifo", ms, load="cpu")), id="ddd444",
                                campaign_id=cid,
                                settings={"warmup_ns": 10 * ms}, sysinfo_id=sid, metrics=metrics),
                     files={ATTACHMENT: json.dumps(refused.as_json()).encode()})
    store.commit_run(run_record(squarewave_cell("c-mmap", ms, load="idle"), id="ccc333",
                                campaign_id=cid, settings={"warmup_ns": 10 * ms}, sysinfo_id=sid,
                                metrics=metrics),
                     series={"vpin": EdgeSeries(t, level)})
    store.close()
    return root / "r"
