"""Fixtures shared by the tests; the helpers they use are in tests/support.py."""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path

import pytest

# `from tests.support import ...` wherever pytest is started from (--import-mode=importlib leaves
# sys.path alone); its asserts report like the tests' own
if str(Path(__file__).parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent.parent))
pytest.register_assert_rewrite("tests.support")

from tests.support import running_sshd  # noqa: E402

# A suite started as a background job of a script (`cmd &` without job control, some CI runners)
# inherits SIGINT and SIGQUIT ignored, and so would every program it starts: the tests that stop
# jitterlab, a load or a program with SIGINT, as a terminal's Ctrl-C does, would test the launcher's
# shell instead. A handler here is reset to the default in every program started (exec keeps only
# an ignored disposition), so the suite tests the same thing however it was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """A loopback sshd shared by a module's tests (a test that drops its server uses start_sshd)."""
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def start_sshd(tmp_path):
    """start_sshd(name): a loopback sshd of this test's own in tmp_path/name, stopped at teardown."""
    with contextlib.ExitStack() as stack:
        yield lambda name: stack.enter_context(running_sshd(tmp_path / name))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist turns the groups into the tests' ids
def pytest_collection_modifyitems(config, items) -> None:
    """Under pytest-xdist (`make test` runs two workers with --dist loadgroup): the tests that boot
    an emulator are one group, run first on one worker while the other takes the rest file by
    file. Two emulated guests at once on a 2-CPU machine would slow both past their boot timeouts,
    and a file's tests share its module fixtures (one booted guest, one sshd) on one worker."""
    emulators = [item for item in items if item.get_closest_marker("vm") is not None]
    for item in items:
        group = "emulators" if item.get_closest_marker("vm") is not None else str(item.path)
        item.add_marker(pytest.mark.xdist_group(group))
    items[:] = emulators + [item for item in items if item.get_closest_marker("vm") is None]
