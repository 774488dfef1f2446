"""Work directories are private: created 0700, and one that another user made or may write, or a
link, is refused before anything is built or run from it (locally and on ssh targets)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.execution.deploy import programs_hash
from jitterlab.model.errors import UserError
from jitterlab.plugins import TARGETS
from jitterlab.targets.local import LocalTarget, default_workdir

NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a directory to another user needs root")


def test_a_new_workdir_is_private(tmp_path):
    target = LocalTarget(workdir=str(tmp_path / "a" / "w"))
    assert stat.S_IMODE(os.stat(target.workdir).st_mode) == 0o700


@as_root
def test_a_workdir_of_another_user_is_refused(tmp_path):
    (tmp_path / "w").mkdir()
    os.chown(tmp_path / "w", NOBODY, NOBODY)
    with pytest.raises(UserError, match=r"workdir .*/w: belongs to nobody, not to you; .* set workdir"):
        LocalTarget(workdir=str(tmp_path / "w"))


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o702])
def test_a_workdir_others_may_write_is_refused(tmp_path, mode):
    (tmp_path / "w").mkdir()
    (tmp_path / "w").chmod(mode)
    with pytest.raises(UserError, match=r"others may write it \(mode d.*\).* chmod go-w"):
        LocalTarget(workdir=str(tmp_path / "w"))


def test_a_link_is_refused(tmp_path):
    (tmp_path / "real").mkdir(mode=0o700)
    (tmp_path / "w").symlink_to(tmp_path / "real")
    with pytest.raises(UserError, match="is not a directory"):
        LocalTarget(workdir=str(tmp_path / "w"))


def test_the_default_is_the_runtime_directory_when_it_is_private(tmp_path, monkeypatch):
    runtime = tmp_path / "run"
    runtime.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(runtime))
    assert default_workdir() == f"{runtime}/jitterlab"
    runtime.chmod(0o755)  # not what a runtime directory is: not used
    assert default_workdir() == f"/tmp/jitterlab-{os.getuid()}"
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert default_workdir() == f"/tmp/jitterlab-{os.getuid()}"


@as_root
def test_programs_planted_in_a_foreign_workdir_are_never_run(tmp_path, capsys):
    """The attack of issue 14: another user prepares the programs directory with a .built marker."""
    workdir = tmp_path / "w"
    planted = workdir / f"programs-{programs_hash()}"
    (planted / "python").mkdir(parents=True)
    (planted / ".built").write_text("native\n")
    proof = tmp_path / "PWNED"
    (planted / "python" / "squarewave.py").write_text(f"open({str(proof)!r}, 'w').close()\n")
    for path in [workdir, *workdir.rglob("*")]:
        os.chown(path, NOBODY, NOBODY)
        path.chmod(0o777)
    campaign = tmp_path / "c.toml"
    campaign.write_text(f'[campaign]\nname = "t"\nduration = "300ms"\nrepetitions = 1\n[[target]]\n'
                        f'name = "local"\nkind = "local"\nworkdir = "{workdir}"\n[matrix]\nimpl = "python"\n'
                        'period = "10ms"\nprobe = "self"\n')
    assert main(["run", str(campaign), "--results", str(tmp_path / "r")]) == 2
    assert "belongs to nobody, not to you" in capsys.readouterr().err
    assert not proof.exists()


def _ssh(sshd, **options):
    return TARGETS.get("ssh", "test")("board", sshd.options(**options))


@pytest.mark.parametrize("case", ["foreign", "writable", "link"])
def test_an_ssh_workdir_is_checked_the_same_way(sshd, tmp_path, case):
    if case == "foreign" and os.geteuid() != 0:
        pytest.skip("giving a directory to another user needs root")
    workdir = tmp_path / "w"
    if case == "link":
        (tmp_path / "real").mkdir(mode=0o700)
        workdir.symlink_to(tmp_path / "real")
    else:
        workdir.mkdir(mode=0o700)
        workdir.chmod(0o777 if case == "writable" else 0o755)
        if case == "foreign":
            os.chown(workdir, NOBODY, NOBODY)
    expected = {"foreign": "belongs to another user", "writable": "may be written by other users",
                "link": "is not a directory"}[case]
    with pytest.raises(UserError, match=rf"workdir {workdir} {expected}"):
        _ssh(sshd, workdir=str(workdir))


def test_a_new_ssh_workdir_is_private(sshd, tmp_path):
    target = _ssh(sshd, workdir=str(tmp_path / "a" / "w"))
    try:
        assert stat.S_IMODE(Path(target.workdir).stat().st_mode) == 0o700
    finally:
        target.close()
