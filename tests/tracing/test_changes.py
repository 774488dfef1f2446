"""Restore records of tracing changes (tracing/changes.py): kept before a change, carried out by their
owner, and by the sweep before a campaign when their owner was killed. On files laid out like tracefs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import host_tag, owner_tag
from jitterlab.tracing import changes
from jitterlab.tracing.changes import Changes, restore_orphaned


@pytest.fixture
def records(tmp_path, monkeypatch) -> Path:
    path = tmp_path / "run" / "tracing"
    monkeypatch.setattr(changes, "RECORD_DIR", str(path))
    monkeypatch.setattr(changes, "LEGACY_DIRS", ())  # this machine's own: another test's, maybe
    return path


@pytest.fixture
def target(tmp_path):
    local = LocalTarget(workdir=str(tmp_path / "wd"))
    yield local
    local.close()


def settings(root: Path, **files: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def test_steps_are_recorded_before_the_change_and_carried_out_latest_first(records, target, tmp_path):
    fs = settings(tmp_path / "fs", tracing_on="1\n", current_tracer="function\n", set_event="")
    (tmp_path / "fs" / "instances" / "mine").mkdir(parents=True)
    done = Changes(target)
    assert done.before(("write", str(fs / "tracing_on"), "1"),
                       ("write", str(fs / "current_tracer"), "function"))
    assert done.before(("rmdir", str(fs / "instances" / "mine"), "-"),
                       ("events", str(fs / "set_event"), "sched:sched_switch irq:irq_handler_entry"))
    [record] = records.iterdir()
    assert record.name.startswith(owner_tag() + "~") and record.suffix == ".undo"
    assert record.read_text().splitlines()[:6] == [
        "rmdir", str(fs / "instances" / "mine"), "-",
        "events", str(fs / "set_event"), "sched:sched_switch irq:irq_handler_entry"]
    (fs / "tracing_on").write_text("0\n")
    (fs / "current_tracer").write_text("nop\n")
    assert done.undo() == []
    assert not (fs / "instances" / "mine").exists()
    assert (fs / "set_event").read_text() == "sched:sched_switch\nirq:irq_handler_entry\n"
    assert ((fs / "tracing_on").read_text(), (fs / "current_tracer").read_text()) == ("1\n", "function\n")
    assert list(records.iterdir()) == []
    assert done.undo() == []  # once


def test_a_step_that_cannot_be_undone_is_named(records, target, tmp_path):
    done = Changes(target)
    done.before(("write", str(tmp_path / "no" / "such" / "file"), "1"))
    assert done.undo() == [f"could not write {tmp_path}/no/such/file"]


def test_a_record_that_cannot_be_written_means_no_change(records, target, tmp_path):
    records.parent.mkdir(parents=True)
    records.write_text("a file where the directory should be")
    done = Changes(target)
    assert not done.before(("write", str(tmp_path / "x"), "1"))
    assert done.undo() == [] and not (tmp_path / "x").exists()


def test_the_sweep_undoes_what_killed_runs_left_and_nothing_of_live_ones(records, target, tmp_path):
    fs = settings(tmp_path / "fs", tracing_on="0\n", buffer_size_kb="7\n")
    (fs / "instances" / "jitterlab-1-dead").mkdir(parents=True)
    records.mkdir(parents=True)
    dead = records / f"{host_tag()}~999999999~1~0badcafe.undo"  # no such process
    steps = ["rmdir", str(fs / "instances" / "jitterlab-1-dead"), "-", "write", str(fs / "tracing_on"), "1",
             "umount", str(tmp_path / "mnt"), "-"]
    dead.write_text("\n".join(steps) + "\n")
    other_host = records / "elsewhere~1~1~00000001.undo"  # another host's owner counts as gone
    other_host.write_text(f"write\n{fs / 'buffer_size_kb'}\n1408\n")
    live = Changes(target)
    live.before(("write", str(fs / "buffer_size_kb"), "2048"))
    said = restore_orphaned(target)
    undid = "undid the tracing changes of a killed jitterlab run:"
    instance = fs / "instances" / "jitterlab-1-dead"
    assert sorted(said) == [f"{undid} rmdir {instance}, write {fs / 'tracing_on'}",
                            f"{undid} write {fs / 'buffer_size_kb'}"]  # the umount waits: a live run traces
    assert not (fs / "instances" / "jitterlab-1-dead").exists()
    assert (fs / "tracing_on").read_text() == "1\n" and (fs / "buffer_size_kb").read_text() == "1408\n"
    assert sorted(p.name for p in records.iterdir()) == [Path(live.path).name]
    assert restore_orphaned(target) == []
    live.undo()
    assert (fs / "buffer_size_kb").read_text() == "2048\n"


def test_a_record_an_older_jitterlab_kept_elsewhere_is_carried_out(records, target, tmp_path, monkeypatch):
    legacy = tmp_path / "run" / "jitterlab" / "tracing"  # /run/jitterlab is a qemu guest's read-only share
    monkeypatch.setattr(changes, "LEGACY_DIRS", (str(legacy),))
    fs = settings(tmp_path / "fs", tracing_on="0\n")
    legacy.mkdir(parents=True)
    (legacy / f"{host_tag()}~999999999~1~0badcafe.undo").write_text(f"write\n{fs / 'tracing_on'}\n1\n")
    assert restore_orphaned(target) == [f"undid the tracing changes of a killed jitterlab run: write "
                                        f"{fs / 'tracing_on'}"]
    assert (fs / "tracing_on").read_text() == "1\n" and list(legacy.iterdir()) == []
