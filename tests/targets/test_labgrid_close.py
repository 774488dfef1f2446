"""LabgridTarget's close() and first use, without a farm: a place that cannot be released is a
UserError naming the command that releases it, except while another error goes up (that error
is kept, told, and the place is tried again); a board that names images connects on first use."""

from __future__ import annotations

import pytest

from jitterlab.model.errors import RunFailed, TargetLost, UserError
from jitterlab.targets.labgrid import target as labgrid_target
from jitterlab.targets.labgrid.target import LabgridTarget


def unopened(held: list[str]) -> LabgridTarget:
    """A LabgridTarget as __init__ leaves it after acquiring `held`, without labgrid or a coordinator."""
    board = object.__new__(LabgridTarget)
    board.name, board.coordinator, board._held = "bbb", "10.0.0.1:20408", list(held)
    board._sessions, board._driver, board._lg_target = None, None, None
    board._workdir, board._connect_on_use = "", False
    board._connecting = labgrid_target.threading.Lock()
    return board


@pytest.fixture
def releases(monkeypatch):
    """Places released, and which of them the coordinator refuses to release."""
    released: list[str] = []
    refused: set[str] = set()

    def release(name: str, address: str, place: str) -> None:
        if place in refused:
            raise OSError("coordinator unreachable")
        released.append(place)

    monkeypatch.setattr(labgrid_target, "release", release)
    return released, refused


def test_a_place_not_released_is_a_user_error_naming_the_fix(releases):
    released, refused = releases
    refused.add("p1")
    board = unopened(["p1", "p2"])
    with pytest.raises(UserError, match=r"^target 'bbb' \(labgrid\): could not release place 'p1' "
                                        r"\(coordinator unreachable\); release it with labgrid-client -x "
                                        r"10.0.0.1:20408 -p p1 release$"):
        board.close()
    refused.clear()
    board.close()  # the place that came after the refused one is released by the next close()
    assert released == ["p2"] and board._held == []


def test_close_in_a_finally_keeps_the_error_that_goes_up(releases):
    released, refused = releases
    refused.add("p1")
    board = unopened(["p1", "p2"])
    with pytest.raises(RunFailed) as info:
        try:
            raise RunFailed("the run broke")
        finally:
            board.close()
    assert info.value.reason == "the run broke"
    assert any("could not release place 'p1'" in note for note in info.value.__notes__)
    assert released == ["p2"] and board._held == ["p1"]  # tried again by the next close()
    refused.clear()
    board.close()
    assert released == ["p2", "p1"] and board._held == []


def test_a_board_that_names_images_connects_when_first_used(monkeypatch):
    board = unopened([])
    connected = []

    class Sessions:
        def close(self) -> None:
            connected.append(False)

    sessions = Sessions()

    def connect() -> None:
        connected.append(True)
        board._connect_on_use = False
        board._sessions, board._workdir = sessions, "/tmp/jl"  # type: ignore[assignment]

    monkeypatch.setattr(board, "connect", connect)
    board._connect_on_use = True
    assert board.workdir == "/tmp/jl" and board._live_sessions() is sessions and connected == [True]
    board.disconnect()  # between images: the image campaign says when to connect again
    with pytest.raises(TargetLost, match="not connected"):
        board._live_sessions()
    assert connected == [True, False]
