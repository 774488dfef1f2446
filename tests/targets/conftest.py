"""Fixtures shared by the target tests."""

from __future__ import annotations

import shutil
import tempfile

import pytest


@pytest.fixture
def units_here(monkeypatch):
    """A directory of this test's own for the emulated units it starts (their qemu's argv names their
    directory), so that waiting for them to end waits for them alone: the suite's other worker may
    run another test's unit meanwhile."""
    where = tempfile.mkdtemp(prefix="jlu-")  # short: the unit's UART socket path must fit 108 bytes
    monkeypatch.setattr(tempfile, "tempdir", where)
    yield where
    shutil.rmtree(where, ignore_errors=True)
