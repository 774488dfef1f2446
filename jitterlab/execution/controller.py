"""This machine as the runs of a campaign see it (RunContext.controller): a local target where
instruments and clients run, which builds jitterlab's programs the first time a run asks for them
(the far end of udp-echo or pps), once per source version like any target."""

from __future__ import annotations

import threading

from jitterlab.execution.deploy import deploy
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import BuildsProgramsOnDemand, Wrapper
from jitterlab.targets.local import LocalTarget


class Controller(Wrapper, BuildsProgramsOnDemand):
    """A target on this machine that builds the programs on demand (most campaigns never ask)."""

    def __init__(self, inner: Target) -> None:
        super().__init__(inner)
        self._lock = threading.Lock()  # runs of several targets may ask at once
        self._bindir: str | None = None

    def programs_dir(self) -> str:
        with self._lock:
            if self._bindir is None:
                self._bindir = deploy(self.inner).bindir
            return self._bindir


def open_controller() -> Controller:
    """The controller of a campaign; close() it when the campaign ends."""
    return Controller(LocalTarget(name="controller"))  # its default workdir, swept like a target's
