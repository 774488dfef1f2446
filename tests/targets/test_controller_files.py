"""A target whose files are this machine's (SharesControllerFiles: local) has /proc read and its runs'
directories made by jitterlab itself; what comes of it is what the command another target runs gives
(here the same machine, reached as a target without the capability)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitterlab.measure.fetched import fetched_text
from jitterlab.measure.loads import base as loads_base
from jitterlab.measure.loads.base import GROUP_SCRIPT, LoadContext, Tool, parse_group
from jitterlab.measure.loads.idle import sample_system
from jitterlab.model.errors import RunFailed
from jitterlab.targets.base import Completed, Process
from jitterlab.targets.capabilities import SharesControllerFiles, has
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import renew_scratch, retire


class _Elsewhere:
    """The same machine as a target that starts a command for everything (as ssh does)."""

    def __init__(self, local: LocalTarget) -> None:
        self._local, self.name, self.workdir = local, "elsewhere", local.workdir

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        return self._local.run(argv, timeout_s)

    def spawn(self, argv: list[str], log_path: str | None = None) -> Process:
        return self._local.spawn(argv, log_path)

    def put(self, local: Path, remote: str) -> None:
        self._local.put(local, remote)

    def get(self, remote: str, local: Path) -> None:
        self._local.get(remote, local)

    def close(self) -> None:
        self._local.close()


@pytest.fixture
def local(tmp_path):
    target = LocalTarget("here", str(tmp_path / "w"))
    yield target
    target.close()


def test_only_the_local_kind_reads_here(local):
    assert has(local, SharesControllerFiles) is local
    assert has(_Elsewhere(local), SharesControllerFiles) is None


def test_a_runs_file_reads_the_same_in_place_as_fetched(local, tmp_path, monkeypatch):
    (tmp_path / "log").write_bytes(b"done\n\xff, not utf-8")
    elsewhere = _Elsewhere(local)
    copied = []
    monkeypatch.setattr(_Elsewhere, "get", lambda self, remote, into: copied.append(remote) or
                        self._local.get(remote, into))
    for path in (str(tmp_path / "log"), str(tmp_path / "missing")):
        assert fetched_text(local, path) == fetched_text(elsewhere, path)
    assert fetched_text(local, str(tmp_path / "log")) == "done\n\ufffd, not utf-8"
    assert fetched_text(local, str(tmp_path / "missing")) == ""
    assert copied == [str(tmp_path / "log"), str(tmp_path / "missing")]  # only the other kind copies


def test_read_here_is_what_cat_prints_of_the_files_it_can_read(local, tmp_path):
    (tmp_path / "a").write_text("one\n")
    (tmp_path / "b").write_bytes(b"two, no newline")
    paths = [str(tmp_path / "a"), str(tmp_path / "missing"), "/proc/self/stat/nothing", str(tmp_path / "b")]
    assert local.read_here(paths) == "one\ntwo, no newline"
    cat = local.run(["sh", "-c", 'cat "$@" 2>/dev/null; exit 0', "sh", *paths])
    assert local.read_here(paths) == cat.stdout


def test_a_tools_group_read_here_is_the_group_the_script_reads(local, tmp_path):
    ctx = LoadContext(local, str(tmp_path / "w" / "scratch"))
    os.makedirs(ctx.scratch)
    tool = Tool(ctx, "sleepers", ["sh", "-c", "sleep 30 & sleep 30 & sleep 30 & wait"], "sleepers.log")
    try:
        here = tool.await_running(3, 10.0)  # three sleeping children of the shell, read here
        assert (here.workers, here.stopped) == (3, 0)
        scripted = parse_group(local.run(["sh", "-c", GROUP_SCRIPT, tool.proc.pidfile]).stdout)
        assert scripted is not None and (scripted.workers, scripted.stopped) == (3, 0)
        elsewhere = Tool.__new__(Tool)
        vars(elsewhere).update(vars(tool), target=_Elsewhere(local))
        # members and states alike (CPU ticks are left out: a sleep just started may still add one)
        seen = [(g.workers, g.stopped) for g in (elsewhere.group(), tool.group(), scripted) if g is not None]
        assert seen == [(3, 0)] * 3
    finally:
        tool.proc.stop()
    assert tool.group() is None  # the leader is gone


@pytest.mark.parametrize("lists_children", [True, False])
def test_a_tools_group_read_here_walks_its_descendants_or_every_process(local, tmp_path, monkeypatch,
                                                                      lists_children):
    """Read here, a group is its leader's descendants (grandchildren too), found through the kernel's
    lists of children; a kernel without them (CONFIG_PROC_CHILDREN) has every process read."""
    if not lists_children:
        monkeypatch.setattr(loads_base, "_lists_children", lambda: False)
    ctx = LoadContext(local, str(tmp_path / "w" / "scratch"))
    os.makedirs(ctx.scratch)
    tool = Tool(ctx, "family", ["sh", "-c", "sh -c 'sleep 30 & sleep 30 & wait' & wait"], "family.log")
    try:
        group = tool.await_running(3, 10.0)  # the inner shell and its two sleeps
        scripted = parse_group(local.run(["sh", "-c", GROUP_SCRIPT, tool.proc.pidfile]).stdout)
        assert scripted is not None and (scripted.workers, scripted.stopped) == (3, 0)
        assert (group.workers, group.stopped) == (3, 0)
    finally:
        tool.proc.stop()
    assert tool.group() is None


def test_the_system_sample_read_here_has_what_the_command_reads(local):
    here, there = sample_system(local), sample_system(_Elsewhere(local))
    assert set(here.cpu_ticks) == set(there.cpu_ticks) and "cpu" in here.cpu_ticks
    assert here.ctxt is not None and there.ctxt is not None and here.uptime_s > 0


def test_a_run_directory_renewed_here_removes_what_was_retired_and_no_more(local, tmp_path):
    old, kept = tmp_path / "w" / "old", tmp_path / "kept"
    (old / "sub").mkdir(parents=True)
    (old / "sub" / "f").write_text("x")
    kept.mkdir()
    (kept / "inside").write_text("y")
    link, file = tmp_path / "w" / "link", tmp_path / "w" / "file"
    link.symlink_to(kept)  # a link is removed, never what it points to
    file.write_text("z")
    for path in (old, link, file, tmp_path / "w" / "never-there"):
        retire(local, str(path))
    renew_scratch(local, str(tmp_path / "w" / "new" / "run"))
    assert (tmp_path / "w" / "new" / "run").is_dir()
    assert not old.exists() and not os.path.lexists(link) and not file.exists()
    assert (kept / "inside").read_text() == "y"


def test_a_run_directory_that_cannot_be_made_fails_the_run_with_the_fix(local, tmp_path):
    (tmp_path / "plain").write_text("a file, not a directory")
    with pytest.raises(RunFailed, match=r"cannot make the run's directory .*/plain/run: Not a directory; "
                                        r"give the target a workdir this user may write"):
        renew_scratch(local, str(tmp_path / "plain" / "run"))
