"""The offline bundle the LAVA tests install jitterlab from: built once per run of the suite from this
checkout for this machine's Python (pip fetches the dependencies' wheels: network here, none on the
device)."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

import pytest

from jitterlab.execution import bundle
from jitterlab.model.errors import UserError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def offline_bundle(tmp_path_factory) -> Path:
    # the xdist workers of one run share their basetemp's parent: the first worker to get here
    # builds (pip builds the wheel, fetches ~190 MB of wheels), the other waits and reads it
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    where = root / "lava-bundle"
    with open(root / "lava-bundle.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (where / "built").exists():
            try:
                bundle.build(where / "wheels", bundle.this_device(), REPO, where / "bundle.tar", tree=True)
            except UserError as e:  # no network to PyPI here
                pytest.skip(f"could not build the offline bundle: {e}")
            (where / "built").touch()
    return where
