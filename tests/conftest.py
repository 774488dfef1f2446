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

from tests.support import hold_to_declared, running_sshd  # noqa: E402

# A suite started as a background job of a script (`cmd &` without job control, some CI runners)
# inherits SIGINT and SIGQUIT ignored, and so would every program it starts: the tests that stop
# jitterlab, a load or a program with SIGINT, as a terminal's Ctrl-C does, would test the launcher's
# shell instead. A handler here is reset to the default in every program started (exec keeps only
# an ignored disposition), so the suite tests the same thing however it was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def declared_metrics_only(monkeypatch):
    """Every measurement a test makes of a registered benchmark (on recorded outputs, a fake target,
    this machine) holds only metrics the benchmark declared for its cell: `run --until-decided
    --watch` refuses every other name before measuring (tests/benchmarks/test_declared_metrics.py)."""
    found = hold_to_declared(monkeypatch)
    yield
    assert not found, f"metrics produced but not declared (Benchmark.metric_names): {sorted(set(found))}"


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
