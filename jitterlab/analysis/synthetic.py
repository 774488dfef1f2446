"""Synthetic square-wave edges with exactly known answers, for tests, benches and fake targets."""

from __future__ import annotations

import numpy as np

DEFAULT_START_NS = 1_000_000_000  # 1 s after boot: keeps times positive and far from 0


def square_wave(
    period_ns: int,
    n_edges: int,
    *,
    start_ns: int = DEFAULT_START_NS,
    jitter_ns: float = 0,
    seed: int = 0,
    drift_ppm: float = 0.0,
    delays: dict[int, int] | None = None,
    outlier_rate: float = 0.0,
    outlier_ns: int = 0,
    first_level: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """Edge times (int64 ns) and levels (uint8, level after each edge) of a square wave.

    Edge k is nominally at `start_ns + rint(k * period_ns/2 * (1 + drift_ppm*1e-6))`, so with
    `period_ns` even and `period_ns/2 * drift_ppm*1e-6` an integer every half period is exact.
    Then each edge is moved by its own rounded normal jitter (sd `jitter_ns`), a random
    `outlier_rate` fraction of edges is delayed by `outlier_ns`, and `delays[k]` ns are added to
    edge k (negative = early). Edges must stay strictly increasing, else ValueError.
    """
    if period_ns <= 0 or n_edges < 0:
        raise ValueError(f"period_ns must be > 0 and n_edges >= 0, got {period_ns}, {n_edges}")
    half_ns = period_ns / 2 * (1.0 + drift_ppm * 1e-6)
    k = np.arange(n_edges, dtype=np.int64)
    # an integral half period takes the exact integer path: no float rounding at large k
    exact = half_ns == int(half_ns)
    t_ns = k * int(half_ns) if exact else np.rint(k * half_ns).astype(np.int64)
    t_ns += start_ns
    rng = np.random.default_rng(seed)
    if jitter_ns:
        t_ns += np.rint(rng.normal(0.0, jitter_ns, n_edges)).astype(np.int64)
    if outlier_rate:
        late = rng.random(n_edges) < outlier_rate
        t_ns[late] += outlier_ns
    for edge, delay_ns in (delays or {}).items():
        t_ns[edge] += delay_ns
    if n_edges > 1 and not (t_ns[1:] > t_ns[:-1]).all():
        raise ValueError("jitter, outliers or delays reorder edges; keep them below period_ns/2")
    level = ((k + first_level) & 1).astype(np.uint8)
    return t_ns, level


def blind_intervals(*spans: tuple[int, int]) -> np.ndarray:
    """An (n, 2) int64 array of [start_ns, end_ns] spans; they must be sorted and not overlap."""
    blind = np.array(spans, dtype=np.int64).reshape(-1, 2)
    if (blind[:, 1] < blind[:, 0]).any() or (blind[1:, 0] <= blind[:-1, 1]).any():
        raise ValueError(f"blind spans must be sorted, non-overlapping [start, end]: {spans}")
    return blind


def observe(
    t_ns: np.ndarray, level: np.ndarray, blind: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """What a polling observer records when it is blind during `blind`.

    Edges inside a blind span (start <= t <= end) are not seen. If an odd number of them was
    missed, the level changed while blind and the observer records one catch-up edge at the
    span's end, timestamped with the end (the moment it looked again). Levels still alternate.
    """
    t_ns = np.asarray(t_ns, dtype=np.int64)
    level = np.asarray(level, dtype=np.uint8)
    lo = np.searchsorted(t_ns, blind[:, 0], side="left")
    hi = np.searchsorted(t_ns, blind[:, 1], side="right")
    keep = np.ones(len(t_ns), dtype=bool)
    for a, b in zip(lo, hi, strict=True):  # one step per blind span, not per edge
        keep[a:b] = False
    odd = (hi - lo) % 2 == 1
    catch_t = blind[odd, 1]
    catch_level = level[hi[odd] - 1]
    t_out = np.concatenate([t_ns[keep], catch_t])
    level_out = np.concatenate([level[keep], catch_level])
    order = np.argsort(t_out, kind="stable")
    return t_out[order], level_out[order]
