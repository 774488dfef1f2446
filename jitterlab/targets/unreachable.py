"""Stands in for a target that could not be reached, so its runs fail with the reason."""

from __future__ import annotations

from pathlib import Path

from jitterlab.model.errors import TargetLost
from jitterlab.targets.base import Completed, Process


class UnreachableTarget:
    """Every call raises TargetLost(reason); close() does nothing."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        self.workdir = "/nonexistent"

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        raise TargetLost(self.reason)

    def spawn(self, argv: list[str], log_path: str | None = None) -> Process:
        raise TargetLost(self.reason)

    def put(self, local: Path, remote: str) -> None:
        raise TargetLost(self.reason)

    def get(self, remote: str, local: Path) -> None:
        raise TargetLost(self.reason)

    def close(self) -> None:
        pass
