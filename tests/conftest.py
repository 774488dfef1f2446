"""Fixtures shared by the tests; the helpers they use are in tests/support.py."""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path

import pytest

# `from tests.support import ...` wherever pytest is started from (--import-mode=importlib leaves
# sys.path alone); its asserts report like the tests' own
if str(Path(__file__).parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent.parent))
pytest.register_assert_rewrite("tests.support")

from tests.support import running_sshd  # noqa: E402


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
