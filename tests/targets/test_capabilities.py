"""Capabilities: a target has what its kind declares (and offers as configured), a wrapper passes
on what it wraps, and code that needs one a target lacks gets one line saying which and why."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.base import Completed, Target
from jitterlab.targets.capabilities import (
    ControllerMachine,
    CrossBuilt,
    HostKeyStatus,
    ReachedBySSH,
    SharesControllerCpus,
    SharesControllerFiles,
    WaitsForPath,
    Wrapper,
    capabilities_of,
    has,
    host_key_warning,
    need,
)
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.ssh.options import parse_options
from jitterlab.targets.ssh.target import SSHTarget


@pytest.fixture
def local(tmp_path):
    target = LocalTarget("here", str(tmp_path / "w"))
    yield target
    target.close()


def ssh_target(**options) -> SSHTarget:
    return SSHTarget("board", parse_options({"host": "board.lab", **options}, "c.toml: target[0]"))


def test_a_target_lacking_a_capability_is_one_line_naming_it_and_why(local):
    with pytest.raises(UserError) as info:
        need(local, ReachedBySSH, "ssh-transfer measures the SSH link")
    assert str(info.value) == ("target 'here' cannot be reached with ssh (use an ssh, labgrid or qemu "
                               "target): ssh-transfer measures the SSH link")
    assert has(local, ReachedBySSH) is None and has(local, CrossBuilt) is None


def test_a_target_has_what_its_kind_declares(local):
    assert need(local, ControllerMachine, "x") is local and has(local, WaitsForPath) is local
    target = ssh_target()
    try:
        assert has(target, ReachedBySSH) is target and has(target, ControllerMachine) is None
        assert target.ssh_command(["true"])[-2:] == ["board.lab", "true"]
    finally:
        target.close()


def test_an_ssh_target_without_cc_does_not_offer_cross_building():
    plain, cross = ssh_target(), ssh_target(cc="aarch64-linux-gnu-gcc")
    try:
        assert isinstance(plain, CrossBuilt) and has(plain, CrossBuilt) is None
        with pytest.raises(UserError, match=r"^target 'board' cannot have its programs built on the "
                                            r"controller \(no cross compiler is set\): because$"):
            need(plain, CrossBuilt, "because")
        found = has(cross, CrossBuilt)
        assert found is cross and found.cross_cc == "aarch64-linux-gnu-gcc"
        assert has(Wrapper(plain), CrossBuilt) is None and has(Wrapper(cross), CrossBuilt) is cross
    finally:
        plain.close()
        cross.close()


class _Checked(Wrapper, HostKeyStatus):
    """A wrapper that adds a capability of its own to those of the target it wraps."""

    def __init__(self, inner: Target, verified: bool) -> None:
        super().__init__(inner)
        self.verified = verified

    @property
    def host_key_verified(self) -> bool:
        return self.verified

    @property
    def host_key_unverified(self) -> tuple[str, str]:
        return ("its host key is not checked", 'set known_hosts = "..." in its [[target]]')


def test_a_wrapper_passes_on_the_capabilities_and_the_protocol_of_what_it_wraps(local, tmp_path):
    wrapped = Wrapper(Wrapper(local))
    assert isinstance(wrapped, Target) and not isinstance(wrapped, ControllerMachine)
    assert has(wrapped, ControllerMachine) is local  # asked through two wrappers
    assert has(wrapped, ReachedBySSH) is None and has(wrapped, HostKeyStatus) is None
    (tmp_path / "w" / "f").write_text("x")
    waits = need(wrapped, WaitsForPath, "x")
    assert waits.wait_for_path(str(tmp_path / "w" / "f"), 0.0)
    assert (wrapped.name, wrapped.workdir) == ("here", local.workdir)
    assert wrapped.run(["echo", "hi"]).stdout == "hi\n"
    proc = wrapped.spawn(["sleep", "30"])
    assert local.live_pids() == [proc.pid]
    wrapped.close()  # closes what it wraps: the process it spawned is stopped
    assert local.live_pids() == []
    wrapped.put(tmp_path / "w" / "f", str(tmp_path / "g"))
    assert (tmp_path / "g").read_text() == "x"
    checked = _Checked(wrapped, verified=True)
    assert has(checked, HostKeyStatus) is checked and has(checked, ControllerMachine) is local
    assert set(capabilities_of(checked)) == {HostKeyStatus, ControllerMachine, SharesControllerCpus,
                                             SharesControllerFiles, WaitsForPath}


def test_the_host_key_warning_comes_from_the_target_that_was_not_checked(local):
    assert host_key_warning(local) is None  # a kind that does not tell: nothing to warn about
    assert host_key_warning(_Checked(local, verified=True)) is None
    warning = host_key_warning(Wrapper(_Checked(local, verified=False)))
    assert warning is not None and warning.message == "its host key is not checked"
    assert warning.remedy == 'set known_hosts = "..." in its [[target]]'


def test_a_labgrid_board_declares_host_key_status_and_flashing():
    labgrid_target = pytest.importorskip("jitterlab.targets.labgrid.target")
    from jitterlab.targets.capabilities import FlashesImages

    cls = labgrid_target.LabgridTarget
    assert issubclass(cls, HostKeyStatus) and issubclass(cls, FlashesImages) and issubclass(cls, ReachedBySSH)
    assert not issubclass(cls, ControllerMachine)
    assert Path(labgrid_target.__file__).parent.name == "labgrid"
    # cross-built only when its [[target]] names a cross compiler (a board without one)
    for options, built_here in (({}, False), ({"cc": "aarch64-linux-gnu-gcc"}, True)):
        board = cls.__new__(cls)
        board.options = labgrid_target.parse_options({"env": __file__, **options}, "t")
        assert board.offers(CrossBuilt) is built_here and board.offers(FlashesImages)


class _Polled:
    """A target that declares no capability: only `test -e` tells it a file is there."""

    name, workdir = "board", "/w"

    def __init__(self) -> None:
        self.calls: list[tuple[str, ...]] = []

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        self.calls.append(tuple(argv))
        return Completed(tuple(argv), 0, "", "")


def test_waiting_for_a_file_asks_a_target_that_can_wait_and_polls_the_others():
    from jitterlab.targets.processes import wait_for_path

    asked: list[tuple[str, float]] = []

    class Waits(Wrapper, WaitsForPath):
        def wait_for_path(self, path: str, timeout_s: float) -> bool:
            asked.append((path, timeout_s))
            return True

    board = _Polled()
    assert wait_for_path(Waits(board), "/r/ready", 5.0)  # type: ignore[arg-type]
    assert asked == [("/r/ready", 0.05)] and board.calls == []  # no round trip per look
    assert wait_for_path(Wrapper(board), "/r/ready", 5.0)  # type: ignore[arg-type]
    assert board.calls == [("test", "-e", "/r/ready")]
