"""A store's campaigns as the store returns them: one campaign whole, or each as a list shows it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

IMPORTS = "import"  # the fingerprint of a campaign of captures imported from files: no file to hash


@dataclass(frozen=True)
class StoredCampaign:
    """One campaign with what it was measured from: its file's path and text, and its fingerprint
    (what `run --resume` checks the file against)."""

    id: int
    name: str
    fingerprint: str
    source_path: str
    source: str  # the campaign file's text, "" for captures imported from files
    labels: Mapping[str, str]
    created_ns: int
    jitterlab_version: str

    @property
    def imported(self) -> bool:
        """A campaign of captures imported from files (jitterlab cannot measure it again)."""
        return self.fingerprint == IMPORTS


@dataclass(frozen=True)
class CampaignEntry:
    """A campaign as the store lists them: its name, labels, when it was created and its runs."""

    id: int
    name: str
    created_ns: int
    n_runs: int
    labels: Mapping[str, str]
