"""Campaigns on ssh targets (real sshd servers on loopback), in parallel, also when one goes away.

Timing is never asserted; what ran where, what was stored, and that nothing is left running are.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution import build_cache, preflight
from jitterlab.store.catalog import Store
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.ssh.loopback_sshd import available, free_port
from tests.support import wait_gone

pytestmark = [pytest.mark.slow, pytest.mark.skipif(available() is not None, reason=str(available()))]


def has_interpreter(elf: Path) -> bool:
    """True when a 64-bit little-endian ELF file asks for a dynamic loader (a PT_INTERP header)."""
    data = elf.read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01"
    phoff = int.from_bytes(data[0x20:0x28], "little")
    size, count = int.from_bytes(data[0x36:0x38], "little"), int.from_bytes(data[0x38:0x3A], "little")
    types = [int.from_bytes(data[phoff + i * size : phoff + i * size + 4], "little") for i in range(count)]
    return 3 in types


@pytest.fixture
def servers(start_sshd):
    return [start_sshd(f"sshd{i}") for i in range(2)]


def campaign(tmp_path: Path, targets: str, *, reps: int = 2) -> Path:
    path = tmp_path / "boards.toml"
    path.write_text(
        f"""
[campaign]
name = "boards"
repetitions = {reps}
duration = "300ms"
warmup = "20ms"
run_timeout = "20s"

{targets}
[matrix]
impl = ["c-mmap"]
period = ["10ms"]
probe = "self"
"""
    )
    return path


def test_two_ssh_targets_in_parallel(tmp_path, servers, monkeypatch):
    b1, b2 = servers
    asked: dict[str, list[str]] = {}
    real = preflight._missing_tools

    def missing_tools(target, tools):
        asked[target.name] = tools
        return real(target, tools)

    monkeypatch.setattr(preflight, "_missing_tools", missing_tools)
    targets = b1.toml("b1", workdir=str(tmp_path / "w1"))
    targets += b2.toml("b2", workdir=str(tmp_path / "w2"), cc="gcc")
    results = tmp_path / "results"
    assert main(["run", str(campaign(tmp_path, targets)), "--results", str(results)]) == 0
    store = Store(results, create=False)
    runs = store.runs()
    assert sorted((r.target, r.status) for r in runs) == [("b1", "ok")] * 2 + [("b2", "ok")] * 2
    assert all(r.metric("max_rel_period_error", "self") is not None for r in runs)
    assert {store.sysinfo(r.sysinfo_id).hostname for r in runs} == {os.uname().nodename}
    # b1 built on the target; b2 got static programs cross-built here (cc = "gcc")
    [built1] = (tmp_path / "w1").glob("programs-*/.built")
    [built2] = (tmp_path / "w2").glob("programs-*/.built")
    assert built1.read_text() == "native\n" and built2.read_text() == "cross gcc\n"
    assert not has_interpreter(built2.parent / "c" / "c-mmap")  # linked statically
    assert built1.parent.name != built2.parent.name
    assert {"make", "cc"} <= set(asked["b1"]) and not {"make", "cc"} & set(asked["b2"])
    assert wait_gone(f"{tmp_path}/w", timeout_s=20) == []


def test_an_unreachable_target_fails_its_runs_and_the_other_goes_on(tmp_path, servers):
    b1 = servers[0]
    dead = f'[[target]]\nname = "gone"\nkind = "ssh"\nhost = "127.0.0.1"\nport = {free_port()}\n'
    targets = b1.toml("b1", workdir=str(tmp_path / "w1")) + dead
    results = tmp_path / "results"
    assert main(["run", str(campaign(tmp_path, targets)), "--results", str(results)]) == 1
    runs = Store(results, create=False).runs()
    assert sorted((r.target, r.status) for r in runs) == [("b1", "ok")] * 2 + [("gone", "failed")] * 2
    for run in runs:
        if run.target == "gone":
            assert run.error.startswith("not run: target 'gone'") and "connection refused" in run.error


def _committed(results: Path, target: str) -> int:
    try:
        store = Store(results, create=False)
    except Exception:
        return 0
    try:
        return sum(1 for r in store.runs() if r.target == target)
    finally:
        store.close()


def test_a_target_dropped_mid_campaign_then_resume(tmp_path, servers):
    b1, b2 = servers
    targets = b1.toml("b1", workdir=str(tmp_path / "w1")) + b2.toml("b2", workdir=str(tmp_path / "w2"))
    path = campaign(tmp_path, targets, reps=4)
    results = tmp_path / "results"
    dropped = threading.Event()

    def drop_b2_after_its_first_run() -> None:
        deadline = time.monotonic() + 120
        while _committed(results, "b2") < 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        b2.drop()
        dropped.set()

    dropper = threading.Thread(target=drop_b2_after_its_first_run, daemon=True)
    dropper.start()
    assert main(["run", str(path), "--results", str(results)]) == 1
    dropper.join(5)
    assert dropped.is_set()
    runs = Store(results, create=False).runs()
    assert sorted(r.status for r in runs if r.target == "b1") == ["ok"] * 4
    lost = [r for r in runs if r.target == "b2" and r.status != "ok"]
    assert len([r for r in runs if r.target == "b2"]) == 4 and lost
    assert all("target 'b2'" in r.error for r in lost), [r.error for r in lost]
    # the commands on the dropped target died with their channel
    assert wait_gone(f"{tmp_path}/w", timeout_s=20) == []

    b2.start()  # back on the same port, with the same host key
    assert main(["run", str(path), "--results", str(results), "--resume", "--retry-failed"]) == 0
    final = Store(results, create=False).runs()
    assert sorted((r.target, r.status) for r in final if r.status == "ok") == [("b1", "ok")] * 4 + [
        ("b2", "ok")
    ] * 4
    assert wait_gone(f"{tmp_path}/w", timeout_s=20) == []


def test_a_second_board_of_the_same_build_identity_gets_the_first_ones_programs(tmp_path, servers):
    """Over ssh: the first board's build is fetched into the build cache, the second board (a fresh
    work directory, as a board flashed per job has) gets it without make, and its runs say so."""
    script = build_cache.IDENTITY_SCRIPT
    if build_cache.parse_identity(LocalTarget().run(["sh", "-c", script]).stdout) is None:
        pytest.skip("this machine's build identity cannot be read fully (pkg-config, libgpiod-dev)")
    builds = {}
    for name, server in zip(("b1", "b2"), servers, strict=True):
        targets = server.toml(name, workdir=str(tmp_path / f"w-{name}"))
        results = tmp_path / f"results-{name}"
        assert main(["run", str(campaign(tmp_path, targets, reps=1)), "--results", str(results)]) == 0
        store = Store(results, create=False)
        [run] = store.runs()
        assert run.status == "ok"
        builds[name] = store.sysinfo(run.sysinfo_id).programs_build
    [entry] = Path(os.environ[build_cache.ENV]).glob("*.tar")  # the tests' own cache (conftest.py)
    assert builds == {"b1": "native", "b2": f"native; reused {entry.stem} built on b1"}
    [marker] = (tmp_path / "w-b2").glob("programs-*/.built")
    assert marker.read_text() == f"native\nreused {entry.stem} built on b1\n"
