"""Restore records on a target (targets/records.py): kept whole in one command, listed with their
owner from a kind's directory and an older jitterlab's in one command, an orphan told from a record
whose owner still runs."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitterlab.targets import records
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.processes import host_tag, owner_start_ticks, owner_tag

DEAD = f"{host_tag()}~999999999~1"  # no such process
PARENT = f"{host_tag()}~{os.getppid()}~{owner_start_ticks(os.getppid())}"  # runs while this test does
UNDO = records.Kind(".undo", key="[0-9a-f]{8}")


@pytest.fixture
def target(tmp_path) -> FakeTarget:
    return FakeTarget(workdir=str(tmp_path / "wd"), fallback_local=True)  # commands run here, for real


def test_a_record_is_kept_whole_in_one_command(target, tmp_path):
    directory = str(tmp_path / "run" / "kind")
    path = UNDO.path(directory, "0badcafe")
    assert path == f"{directory}/{owner_tag()}~0badcafe.undo"
    assert records.keep(target, directory, path, ["write", "/x", "1"]).ok
    assert target.calls == [("sh", "-c", records.KEEP, "sh", directory, path, "write", "/x", "1")]
    assert Path(path).read_text() == "write\n/x\n1\n" and os.listdir(directory) == [Path(path).name]
    assert records.lines_of(target, path) == ["write", "/x", "1"]


def test_a_head_file_goes_first_and_an_unreadable_one_leaves_an_empty_line(target, tmp_path):
    (tmp_path / "boot_id").write_text("boot-1\n")
    path = str(tmp_path / "r" / f"{DEAD}~x.json")
    records.keep(target, str(tmp_path / "r"), path, ['{"a": 1}'], head=str(tmp_path / "boot_id"))
    assert Path(path).read_text() == 'boot-1\n{"a": 1}\n'
    records.keep(target, str(tmp_path / "r"), path, ["{}"], head=str(tmp_path / "no-such-file"))
    assert Path(path).read_text() == "\n{}\n"
    with pytest.raises(ValueError, match="--head"):
        records.keep(target, str(tmp_path / "r"), path, ["--head", "x"])


def test_a_record_that_cannot_be_kept_says_so_and_leaves_nothing(target, tmp_path):
    (tmp_path / "run").write_text("a file where the directory should be")
    directory = str(tmp_path / "run" / "kind")
    assert not records.keep(target, directory, UNDO.path(directory, "0badcafe"), ["x"]).ok
    assert (tmp_path / "run").read_text() == "a file where the directory should be"


def test_records_of_a_directory_and_a_legacy_one_are_listed_with_their_owners(target, tmp_path):
    current, legacy = tmp_path / "run" / "kind", tmp_path / "run" / "jitterlab" / "kind"
    current.mkdir(parents=True)
    legacy.mkdir(parents=True)
    for name in (f"{DEAD}~0badcafe.undo", f"{PARENT}~00000001.undo", "elsewhere~1~1~00000002.undo",
                 f"{DEAD}~0badcafe.undo.tmp", f"{DEAD}~not-hex.undo", f"{DEAD}.prev", "notes.txt"):
        (current / name).write_text("x\n")
    (legacy / f"{DEAD}~12345678.undo").write_text("x\n")
    listed = UNDO.listed(target, str(current), str(legacy), str(tmp_path / "missing"))
    assert target.calls == [("ls", "-1", str(current), str(legacy), str(tmp_path / "missing"))]
    assert sorted((r.path, r.owner, r.key) for r in listed) == sorted([
        (f"{current}/{DEAD}~0badcafe.undo", DEAD, "0badcafe"),
        (f"{current}/{PARENT}~00000001.undo", PARENT, "00000001"),
        (f"{current}/elsewhere~1~1~00000002.undo", "elsewhere~1~1", "00000002"),
        (f"{legacy}/{DEAD}~12345678.undo", DEAD, "12345678"),
    ])
    # the orphans: a process that no longer runs, another host's; the parent's is left alone
    orphans = sorted(r.path for r in listed if not r.alive())
    assert orphans == sorted([f"{legacy}/{DEAD}~12345678.undo", f"{current}/{DEAD}~0badcafe.undo",
                              f"{current}/elsewhere~1~1~00000002.undo"])
    assert [r.directory for r in listed if r.alive()] == [str(current)]
    records.remove(target, *orphans)
    assert target.calls[-1] == ("rm", "-f", "--", *orphans)
    assert [r.owner for r in UNDO.listed(target, str(current), str(legacy))] == [PARENT]
    assert UNDO.listed(target, str(tmp_path / "missing")) == []


def test_listing_reads_the_headers_of_busybox_and_gnu_ls():
    """ls heads each directory's names with `DIRECTORY:` when given more than one, in an order of its
    own (and says nothing on stdout of a missing one); with one directory, names only."""
    target = FakeTarget()
    target.respond(["ls", "-1", "/run/a", "/run/old/a"],
                   f"/run/old/a:\n{DEAD}.prev\n\n/run/a:\n{PARENT}.prev\n", rc=1)
    target.respond(["ls", "-1", "/run/a"], f"{PARENT}.prev\nx.prev\n")
    prev = records.Kind(".prev")
    assert [(r.path, r.owner, r.key) for r in prev.listed(target, "/run/a", "/run/old/a")] == [
        (f"/run/a/{PARENT}.prev", PARENT, ""), (f"/run/old/a/{DEAD}.prev", DEAD, "")]  # in the order asked
    assert [r.path for r in prev.listed(target, "/run/a")] == [f"/run/a/{PARENT}.prev"]


def test_a_kind_tells_its_own_records_and_mine(tmp_path):
    prev = records.Kind(".prev")
    mine = prev.named(prev.path("/run/k"))
    assert mine is not None and mine.mine and mine.alive() and mine.owner == owner_tag()
    assert prev.named(f"/run/k/{DEAD}~x.prev") is None  # .prev has no key
    assert UNDO.named(f"{DEAD}~0badcafe.undo") == records.Record(f"{DEAD}~0badcafe.undo", DEAD, "0badcafe")
    assert UNDO.named(f"/run/k/{DEAD}~0badcafe.json") is None


def test_looking_says_whether_a_record_could_be_kept(target, tmp_path):
    directory = tmp_path / "run" / "kind"
    assert UNDO.looked(target, str(directory)) == ([], True)  # missing: the nearest one is writable
    directory.mkdir(parents=True)
    (directory / f"{DEAD}~0badcafe.undo").write_text("x\n")
    assert UNDO.looked(target, str(directory)) == (
        [records.Record(f"{directory}/{DEAD}~0badcafe.undo", DEAD, "0badcafe")], True)
    directory.chmod(0o555)
    try:
        writable = os.access(directory, os.W_OK)  # root may write anything
        assert UNDO.looked(target, str(directory))[1] is writable
    finally:
        directory.chmod(0o755)
