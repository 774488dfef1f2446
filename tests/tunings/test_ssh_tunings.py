"""Each tuning through jitterlab's SSHTarget (a loopback sshd: the "remote" machine is this one), for
real where this machine allows it: check() through ssh says what it says here, a refused tuning
changes nothing and fails with that reason, an applied one changed its files to what it recorded and
kept its journal entry while applied, and restore() puts back every file it touched, byte for byte,
leaving no journal entry. No timing is asserted.

As in test_this_machine.py, the kernel files are this machine's, shared with everything running
here: each tuning is applied for the fraction of a second the test takes, and put back at once.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from jitterlab.model.errors import RunFailed
from jitterlab.model.tuning import Changed, Held
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.ssh.loopback_sshd import available
from jitterlab.targets.ssh.target import SSHTarget
from jitterlab.tunings.base import TUNINGS
from jitterlab.tunings.journal import Journal
from tests.tunings.test_this_machine import CELL, _files, _latency_us

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))


@pytest.fixture(scope="module")
def remote(sshd, tmp_path_factory):
    work = tmp_path_factory.mktemp("ssh-tunings")
    target: SSHTarget = TARGETS.get("ssh", "test")("board", sshd.options(workdir=str(work)))  # type: ignore[assignment]
    yield target
    target.close()


def _entry(target, name: str) -> bool:
    """Whether this jitterlab's journal entry for tuning `name` is on the machine (read through `target`)."""
    path = Journal(target, "", name).path
    return target.run(["test", "-e", path]).ok


@pytest.mark.parametrize("name", TUNINGS.names())
def test_through_ssh_it_does_what_check_said_and_restores_every_byte(remote, tmp_path, name):
    tuning = TUNINGS.get(name, "test")
    before, latency = _files(), _latency_us()
    why = tuning.check(remote, CELL)
    print(f"{name} through ssh: {why or 'can be applied'}")
    assert why == tuning.check(LocalTarget("local", str(tmp_path / "work")), CELL)  # the same machine
    if why is not None:
        with pytest.raises(RunFailed) as failed:
            tuning.apply(remote, CELL)
        assert (failed.value.reason, failed.value.status) == (f"tuning {name}: {why}", "unavailable")
        assert _files() == before and not _entry(remote, name)
        return
    applied = tuning.apply(remote, CELL)
    try:
        for step in applied.steps:
            if isinstance(step, Changed) and os.path.isfile(step.path):
                assert Path(step.path).read_text() == step.after, step.path
            if isinstance(step, Held):
                assert int(step.during or -1) == _latency_us() == 0
        assert _entry(remote, name) == bool(applied.steps and tuning.changes_machine)
    finally:
        problems = tuning.restore(remote, applied)
    assert problems == []
    assert _files() == before and _latency_us() == latency
    assert not _entry(remote, name)
    assert tuning.restore(remote, applied) == []  # restoring twice is restoring once
    assert _files() == before and not _entry(remote, name)


def test_the_launchers_reach_a_program_started_through_ssh(remote):
    slack = TUNINGS.get("timer-slack", "test")
    if (why := slack.check(remote, CELL)) is not None:
        pytest.skip(why)
    applied = slack.apply(remote, CELL)
    done = remote.run([*applied.launcher, "cat", "/proc/self/timerslack_ns"])
    assert (done.rc, done.stdout) == (0, "1\n")
    assert slack.restore(remote, applied) == []
