"""A store written by an older jitterlab: its sysinfo and settings rows, in the layouts it wrote, read into
the typed records by every command, and copied by push key for key."""

from __future__ import annotations

import csv
import io
import json
import sqlite3
from pathlib import Path

from jitterlab.cli.main import main
from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.store.catalog import Store
from tests.test_facts import FIRST, FIRST_SETTINGS


def _older_store(root: Path) -> str:
    """A store whose one run and sysinfo hold the first layouts' JSON, written as text; its run id."""
    store = Store(root)
    cid = store.new_campaign("old", "fp", "old.toml", "", {})
    sid = store.add_sysinfo(cid, "board", SystemFacts.given())
    store.commit_run(run_record(squarewave_cell(), id="01d1", campaign_id=cid, sysinfo_id=sid,
                                metrics=[Metric("max_rel_period_error", 0.01, "ratio", "vpin")]))
    store.close()
    db = sqlite3.connect(root / "results.sqlite")
    db.execute("UPDATE sysinfo SET json = ?", (FIRST,))
    db.execute("UPDATE runs SET params_json = ?", (json.dumps(FIRST_SETTINGS, sort_keys=True),))
    db.commit()
    db.close()
    return "01d1"


def test_the_commands_read_an_older_stores_rows(tmp_path, capsys):
    run_id = _older_store(tmp_path / "r")
    store = Store(tmp_path / "r", create=False)
    [run] = store.runs()
    facts = store.sysinfo(run.sysinfo_id)
    assert facts is not None and facts.kernel_release == "6.18.44-fc-v1300" and facts.runtimes is None
    assert run.settings.program_cpus == (0,) and run.settings.envelope is None
    assert main(["show", run_id, "--results", str(tmp_path / "r")]) == 0
    shown = capsys.readouterr().out
    assert "6.18.44-fc-v1300" in shown and "dynamic:none" in shown and "runtimes" not in shown
    assert main(["summary", "--results", str(tmp_path / "r")]) == 0
    assert "kernel 6.18.44-fc-v1300 (PREEMPT_DYNAMIC, preempt=none)" in capsys.readouterr().out
    assert main(["export", "--results", str(tmp_path / "r"), "--format", "csv"]) == 0
    header = next(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert [c for c in header if c.startswith("setting.")] == [f"setting.{k}" for k in sorted(FIRST_SETTINGS)]


def test_push_copies_an_older_stores_rows_key_for_key(tmp_path):
    _older_store(tmp_path / "r")
    assert main(["push", "--results", str(tmp_path / "r"), "--to", str(tmp_path / "new")]) == 0
    db = sqlite3.connect(tmp_path / "new" / "results.sqlite")
    [(sysinfo,)] = db.execute("SELECT json FROM sysinfo").fetchall()
    [(settings,)] = db.execute("SELECT params_json FROM runs").fetchall()
    db.close()
    assert sysinfo == FIRST and json.loads(settings) == FIRST_SETTINGS
