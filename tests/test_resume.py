"""--resume with others around: one jitterlab measures a campaign at a time (the second is told who),
and a damaged raw file is measured again with --retry-damaged, as its error message says."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store
from jitterlab.store.raw import read_raw
from tests.support import local_campaign

pytestmark = pytest.mark.slow

MATRIX = '[matrix]\nimpl = "c-mmap"\nperiod = "10ms"\nprobe = "self"\n'


def _committed(results: Path) -> int:
    try:
        with sqlite3.connect(results / "results.sqlite") as db:
            return db.execute("SELECT COUNT(*) FROM runs").fetchone()[0]
    except sqlite3.Error:
        return 0


def test_a_second_resume_of_a_campaign_being_measured_is_refused_naming_the_first(tmp_path, capsys):
    path = local_campaign(tmp_path, MATRIX, name="busy", repetitions=6, duration="400ms")
    results = tmp_path / "results"
    first = subprocess.Popen([sys.executable, "-m", "jitterlab", "run", str(path), "--results", str(results)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while _committed(results) < 1:
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read().decode()
            time.sleep(0.05)
        assert main(["run", str(path), "--results", str(results), "--resume"]) == 1  # busy: not bad input
        err = capsys.readouterr().err.replace("\n", "")
        assert f"campaign 'busy' (#1) in {results} is being measured by pid {first.pid} on " \
               f"{os.uname().nodename} since " in err
        assert "then run with --resume" in err
        assert first.wait(120) == 0, first.stderr.read().decode()
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert main(["run", str(path), "--results", str(results), "--resume"]) == 0
    assert "0 runs to measure, 6 already committed" in capsys.readouterr().out
    runs = Store(results, create=False).runs()
    assert sorted(r.repetition for r in runs) == list(range(6))


def test_retry_damaged_measures_again_the_runs_whose_raw_file_is_gone_or_damaged(tmp_path, capsys):
    path = local_campaign(tmp_path, MATRIX, name="dmg", repetitions=3, duration="300ms")
    results = tmp_path / "results"
    assert main(["run", str(path), "--results", str(results)]) == 0
    first, second, third = Store(results, create=False).runs()
    (results / first.raw_path).unlink()
    damaged = results / second.raw_path
    damaged.write_bytes(damaged.read_bytes()[:-10] + b"0123456789")
    with pytest.raises(UserError, match=r"raw file is damaged .* `jitterlab run CAMPAIGN --resume "
                                        r"--retry-damaged`"):
        read_raw(damaged, second.raw_sha256)
    assert main(["run", str(path), "--results", str(results), "--resume"]) == 0
    assert "0 runs to measure" in capsys.readouterr().out  # plain --resume keeps them
    assert main(["run", str(path), "--results", str(results), "--retry-damaged"]) == 2
    assert main(["run", str(path), "--results", str(results), "--resume", "--retry-damaged"]) == 0
    assert "2 runs to measure, 1 already committed" in capsys.readouterr().out
    runs = Store(results, create=False).runs()
    assert sorted(r.repetition for r in runs) == [0, 1, 2]
    assert third.id in {r.id for r in runs} and not {first.id, second.id} & {r.id for r in runs}
    for run in runs:
        assert run.status == "ok"
        read_raw(results / run.raw_path, run.raw_sha256)
