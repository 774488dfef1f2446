"""Raw series a run produces: edge times with levels, samples of one quantity, blind spans."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class EdgeSeries:
    """Edge times (int64 ns) and the level after each edge (uint8), of equal length."""

    t_ns: np.ndarray
    level: np.ndarray

    def __post_init__(self) -> None:
        t_ns = np.asarray(self.t_ns, dtype=np.int64)
        level = np.asarray(self.level, dtype=np.uint8)
        if t_ns.ndim != 1 or level.shape != t_ns.shape:
            raise ValueError(
                f"t_ns, level must be 1-d of equal length: {t_ns.shape}, {level.shape}"
            )
        object.__setattr__(self, "t_ns", t_ns)
        object.__setattr__(self, "level", level)

    def __len__(self) -> int:
        return len(self.t_ns)


@dataclass(frozen=True)
class Samples:
    """Integer samples of one quantity (e.g. round-trip times in ns), in the order measured."""

    values: np.ndarray
    unit: str

    def __post_init__(self) -> None:
        values = np.asarray(self.values, dtype=np.int64)
        if values.ndim != 1:
            raise ValueError(f"samples must be 1-d, got shape {values.shape}")
        object.__setattr__(self, "values", values)

    def __len__(self) -> int:
        return len(self.values)


Series = EdgeSeries | Samples


def blind_series(spans: np.ndarray) -> EdgeSeries:
    """Blind [start, end] spans as a 0/1 signal: level 1 at each start, 0 at each end."""
    spans = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
    level = np.tile(np.array([1, 0], dtype=np.uint8), len(spans))
    return EdgeSeries(spans.reshape(-1), level)


def blind_spans(series: EdgeSeries) -> np.ndarray:
    """The inverse of blind_series: an (n, 2) int64 array of [start, end]."""
    if len(series) % 2 or (series.level[0::2] != 1).any() or (series.level[1::2] != 0).any():
        raise ValueError("a blind series alternates 1 (start) and 0 (end), starting with 1")
    return series.t_ns.reshape(-1, 2)
