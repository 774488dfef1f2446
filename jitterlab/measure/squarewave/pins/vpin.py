"""The virtual pin: a file in /dev/shm laid out like a GPIO `value` file (byte 0 is '0' or '1',
written in place, never truncated), so it works on any Linux and can be mmap'd by an observer."""

from __future__ import annotations

from jitterlab.measure.squarewave.pins.base import PINS, PinBase, PinHandle
from jitterlab.measure.squarewave.pins.offers import LevelPage, MappedLevel, ValueFile
from jitterlab.targets.processes import retire, shm_path


class VirtualPin(PinBase):
    offers = frozenset({ValueFile, MappedLevel, LevelPage})

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self._path: str | None = None

    def setup(self) -> PinHandle:
        path = shm_path(self.ctx.scratch, "pin")
        initial = self.ctx.local_dir / "pin"
        initial.write_bytes(b"0\n")
        self._path = path
        self.ctx.target.put(initial, path)
        return PinHandle("vpin", (ValueFile(path), MappedLevel(path), LevelPage(path)), description=path)

    def teardown(self) -> None:
        if self._path is not None:
            retire(self.ctx.target, self._path)  # removed with the run's directory, moments later
            self._path = None


PINS.add(
    "vpin",
    "virtual pin: a GPIO-value-like file in /dev/shm, written in place, mmap-able (any Linux)",
    VirtualPin,
)
