"""Several writers and readers on one store, as real processes: nothing is lost, nothing refused that
is good, and a reader writes nothing."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from jitterlab.analysis.synthetic import square_wave
from jitterlab.importers import Capture, store_capture
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store
from jitterlab.store.locks import CampaignBusy, CampaignLock

T, LEVEL = square_wave(1_000_000, 200, jitter_ns=2_000, seed=3)
FORK = multiprocessing.get_context("fork")


def _cli(*argv: str, user: int | None = None) -> subprocess.Popen:
    prefix = ["setpriv", f"--reuid={user}", f"--regid={user}", "--clear-groups"] if user is not None else []
    return subprocess.Popen([*prefix, sys.executable, "-m", "jitterlab.cli", *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "COLUMNS": "300"})


def _write_csv(path: Path) -> Path:
    path.write_text("".join(f"{t},{v}\n" for t, v in zip(T, LEVEL, strict=True)))
    return path


def test_six_imports_at_once_are_all_kept(tmp_path):
    capture = _write_csv(tmp_path / "cap.csv")
    results = tmp_path / "st"
    procs = [_cli("import", "edges", str(capture), "--period", "1ms", "--results", str(results))
             for _ in range(6)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, outputs
    store = Store(results, create=False)
    runs = store.runs()
    assert len(runs) == 6
    assert sorted(r.repetition for r in runs) == list(range(6))
    assert len({r.campaign_id for r in runs}) == 1 and len(store.campaigns()) == 1
    said = {out.split(" as run ")[1].split()[0] for out, _ in outputs}
    assert said == {r.id for r in runs}  # every run an import named is there
    assert {p.name for p in (results / "raw").iterdir()} == {Path(r.raw_path).name for r in runs}


def _import_after(barrier, root: str, n: int) -> None:
    barrier.wait()
    store = Store(Path(root))
    try:
        for _ in range(n):
            store_capture(store, Capture(T, LEVEL, __file__), period_ns=1_000_000, warmup_ns=0,
                          labels={"image": "x"})
    finally:
        store.close()


def test_concurrent_commits_from_processes_released_together(tmp_path):
    barrier = FORK.Barrier(8)
    procs = [FORK.Process(target=_import_after, args=(barrier, str(tmp_path), 5)) for _ in range(8)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * 8
    runs = Store(tmp_path, create=False).runs()
    assert sorted(r.repetition for r in runs) == list(range(40))


def _open_after(barrier, root: str, errors) -> None:
    barrier.wait()
    try:
        Store(Path(root)).close()
    except UserError as exc:
        errors.append(str(exc))


def test_processes_opening_a_new_store_at_once_all_succeed(tmp_path):
    for attempt in range(5):
        root = tmp_path / f"new{attempt}"
        barrier, errors = FORK.Barrier(6), FORK.Manager().list()
        procs = [FORK.Process(target=_open_after, args=(barrier, str(root), errors)) for _ in range(6)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(60)
        assert list(errors) == [] and [p.exitcode for p in procs] == [0] * 6
        Store(root, create=False).close()


def test_a_campaign_lock_names_its_holder_and_ends_with_it(tmp_path):
    holder = FORK.Process(target=_hold_lock, args=(str(tmp_path),))
    ready = tmp_path / "locks" / "campaign-7.lock"
    holder.start()
    try:
        while not (ready.exists() and ready.read_text()):
            assert holder.is_alive()
        lock = CampaignLock(tmp_path, 7, "quick")
        with pytest.raises(CampaignBusy, match=rf"campaign 'quick' \(#7\) in {tmp_path} is being measured by "
                                               rf"pid {holder.pid} on {os.uname().nodename} since "):
            lock.acquire()
    finally:
        holder.kill()  # kill -9: the kernel releases the lock
        holder.join()
    lock.acquire()
    lock.release()


def _hold_lock(root: str) -> None:
    CampaignLock(Path(root), 7, "quick").acquire()
    import time

    time.sleep(600)


@pytest.fixture
def readonly_store():
    """A store with one run that the test user may only read (as root: the test runs as nobody, so
    it lives outside pytest's private temporary directory)."""
    top = Path(tempfile.mkdtemp(prefix="jl-readonly-"))
    top.chmod(0o755)
    capture = _write_csv(top / "cap.csv")
    results = top / "ro"
    assert _cli("import", "edges", str(capture), "--period", "1ms", "--results", str(results)).wait() == 0
    for path in [results, *results.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444)
    (top / "out").mkdir()
    (top / "out").chmod(0o777)
    yield results
    for path in [results, *results.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    shutil.rmtree(top)


@pytest.mark.skipif(os.geteuid() == 0 and shutil.which("setpriv") is None, reason="needs setpriv as root")
@pytest.mark.parametrize("argv", [["show"], ["export", "--format", "csv"], ["compare", "--baseline",
                                  "impl=external", "--candidate", "impl=other"], ["report", "-o", "{out}"]])
def test_read_commands_work_on_a_store_the_user_may_only_read(readonly_store, argv):
    user = 65534 if os.geteuid() == 0 else None
    before = sorted(p.name for p in readonly_store.iterdir())
    argv = [a.replace("{out}", str(readonly_store.parent / "out" / "r.html")) for a in argv]
    proc = _cli(*argv, "--results", str(readonly_store), user=user)
    _, stderr = proc.communicate(timeout=120)
    if argv[0] == "compare":  # no runs of impl=other: a user error, not a database one
        assert proc.returncode == 2 and "readonly" not in stderr and "impl=other" in stderr, stderr
    else:
        assert proc.returncode == 0, stderr
    assert sorted(p.name for p in readonly_store.iterdir()) == before


def test_show_on_an_empty_file_writes_nothing(tmp_path):
    (tmp_path / "results.sqlite").write_bytes(b"")
    with pytest.raises(UserError, match=r"results.sqlite: empty, no results yet"):
        Store(tmp_path, create=False)
    assert [(p.name, p.stat().st_size) for p in tmp_path.iterdir()] == [("results.sqlite", 0)]


def test_an_imported_capture_takes_the_next_repetition(tmp_path):
    store = Store(tmp_path)
    first = store_capture(store, Capture(T, LEVEL, __file__), period_ns=1_000_000, warmup_ns=0, labels={})
    second = store_capture(store, Capture(T, LEVEL, __file__), period_ns=1_000_000, warmup_ns=0, labels={})
    assert (first.repetition, second.repetition) == (0, 1)
