"""Files of killed runs (run directories, /dev/shm pins) are removed by the next run's sweep;
files of a live owner, and files that are not jitterlab's, are kept."""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from jitterlab.execution.sweep import sweep
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import SHM_DIR, owner_tag, scratch_dir, shm_path


def test_sweep_removes_only_dead_owners_files(tmp_path):
    target = LocalTarget("local", str(tmp_path / "work"))
    run_id = secrets.token_hex(6)
    mine = scratch_dir(target, run_id)
    host, _, start = owner_tag().split("~")
    dead_owner = f"{host}~{2**22 + 7}~{start}"  # above any pid_max: never alive
    dead = f"{target.workdir}/runs/{dead_owner}/{run_id}"
    other = f"{target.workdir}/runs/not-an-owner"
    for d in (mine, dead, other):
        os.makedirs(d)
    assert mine.startswith(f"{target.workdir}/runs/{owner_tag()}/")
    my_pin = Path(shm_path(mine, "pin"))
    dead_pin = Path(shm_path(dead, "pin"))
    stranger = Path(SHM_DIR) / f"jitterlab-notes-{run_id}.txt"
    try:
        for f in (my_pin, dead_pin, stranger):
            f.write_text("0\n")
        assert dead_pin.name == f"jitterlab-{dead_owner}-{run_id}.pin"
        sweep(target)
        assert Path(mine).is_dir() and my_pin.exists() and Path(other).is_dir() and stranger.exists()
        assert not Path(dead).parent.exists() and not dead_pin.exists()
    finally:
        for f in (my_pin, dead_pin, stranger):
            f.unlink(missing_ok=True)
        target.close()


def test_sweep_removes_the_program_builds_of_dead_owners_of_this_host(tmp_path):
    target = LocalTarget("local", str(tmp_path / "work"))
    host, _, start = owner_tag().split("~")
    builds = {name: Path(target.workdir, f"programs-0123456789ab.build-{name}")
              for name in (owner_tag(), f"{host}~{2**22 + 7}~{start}", f"elsewhere~{2**22 + 7}~1")}
    for path in builds.values():
        (path / "c").mkdir(parents=True)
    done = Path(target.workdir, "programs-0123456789ab")
    done.mkdir()
    sweep(target)
    left = {p.name for p in Path(target.workdir).iterdir()}
    mine, _, elsewhere = builds.values()  # the second one's owner is dead
    assert left == {done.name, mine.name, elsewhere.name}
