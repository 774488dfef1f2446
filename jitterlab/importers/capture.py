"""A capture as an instrument recorded it: the edges of one digital signal in the instrument's own
time ticks, and what the readers of each file format share."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from jitterlab.model.campaigns import IMPORTS

PROBE = "import"  # the probe an imported run is seen by
CAMPAIGN = "import"  # the campaign imports go into unless named
FINGERPRINT = IMPORTS  # the fingerprint of a campaign of imports: it has no file to hash
FORMATS = ("auto", "csv", "vcd")
KINDS = ("auto", "edges", "samples")
EXCERPT_CHARS = 80  # what an error message shows of the offending text, at most


def excerpt(text: str | bytes) -> str:
    """The start of `text` for an error message: at most EXCERPT_CHARS characters, quoted."""
    if isinstance(text, bytes):
        text = text[: 4 * EXCERPT_CHARS].decode("utf-8", errors="replace")
    short = text[:EXCERPT_CHARS]
    return repr(short) + ("..." if len(text) > EXCERPT_CHARS else "")


@dataclass(frozen=True)
class Capture:
    """Edges of one digital signal, as the instrument counted them.

    Times are integer ticks of 1/ticks_per_ns ns (1 for whole nanoseconds; 1000 for a 1 ps
    VCD), so a capture finer than 1 ns keeps its resolution through the analysis.
    `blind_ticks` are spans where the instrument provably lost edges (a repeated level in an
    edge list); `warnings` say so in words.
    """

    t_ticks: np.ndarray
    level: np.ndarray
    source: str
    ticks_per_ns: int = 1
    blind_ticks: np.ndarray = field(default_factory=lambda: np.empty((0, 2), dtype=np.int64))
    warnings: tuple[str, ...] = ()
    resolution: str = "1 ns"  # the time resolution of the file, e.g. "1 ps" ($timescale)

    @property
    def t_ns(self) -> np.ndarray:
        """Times in int64 ns: exact for whole-ns captures, else rounded half up."""
        return to_ns(self.t_ticks, self.ticks_per_ns)


def to_ns(ticks: np.ndarray, ticks_per_ns: int) -> np.ndarray:
    ticks = np.asarray(ticks, dtype=np.int64)
    if ticks_per_ns == 1:
        return ticks
    return (ticks + ticks_per_ns // 2) // ticks_per_ns
