"""The offline bundle the LAVA tests install jitterlab from: built once per session from this checkout
for this machine's Python (pip fetches the dependencies' wheels: network here, none on the device)."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.execution import bundle
from jitterlab.model.errors import UserError

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def offline_bundle(tmp_path_factory) -> Path:
    where = tmp_path_factory.mktemp("bundle")
    try:
        bundle.build(where / "wheels", bundle.this_device(), REPO, where / "bundle.tar")
    except UserError as e:  # no network to PyPI here
        pytest.skip(f"could not build the offline bundle: {e}")
    return where
