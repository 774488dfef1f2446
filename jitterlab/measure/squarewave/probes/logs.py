"""Readers for the files the target programs write: the self log (text) and the observer capture.

Both readers validate the whole file and raise RunFailed("<file>: <what is wrong>") rather
than return data they are not sure of. The data lines are parsed with numpy, never line by line.
"""

from __future__ import annotations

import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterlab.model.errors import RunFailed

SELF_LOG_MAGIC = b"# jitterlab-edges v1 "
OBSERVER_MAGIC = b"JLOBS001"
_OBS_HEADER_BYTES = 24  # magic, uint64 n_edges, uint64 n_blind
_OBS_RECORD_BYTES = 16  # two little-endian int64

OBSERVER_STATS_KEYS = frozenset(
    {
        "polls",
        "poll_ns_p50",
        "poll_ns_p999",
        "poll_ns_max",
        "blind_intervals",
        "blind_ns",
        "blind_dropped",
        "overflow_edges",
        "sched",
        "prio",
        "cpu",
        "mlock",
        "initial_level",
        "start_ns",
        "end_ns",
        "blind_threshold_ns",
    }
)

# clock=none: a program that counted its edges (in `dropped`) but timestamped none (a unit's firmware)
_HEADER_RE = re.compile(rb"# jitterlab-edges v1 clock=(monotonic|realtime|none) impl=([A-Za-z0-9_.-]+)")
_TRAILER_RE = re.compile(rb"# (dropped|end edges)=(\d+)")
_MAX_DIGITS = 19  # int64


@dataclass(frozen=True)
class SelfLog:
    """Edges a square-wave program timestamped itself; t_ns in the clock named by `clock`."""

    t_ns: np.ndarray  # int64
    level: np.ndarray  # uint8
    clock: str  # "monotonic" | "realtime" | "none"
    impl: str
    dropped: int  # edges the program made but could not log

    @property
    def timed(self) -> bool:
        """False for a program that only counts its edges (`dropped` of them): a unit's firmware,
        whose wave no clock of Linux's times."""
        return self.clock != "none"

    @property
    def made(self) -> int:
        """The edges the program made, logged or not."""
        return len(self.t_ns) + self.dropped


@dataclass(frozen=True)
class ObserverCapture:
    """What the vpin observer saw: edges, the intervals it was blind, and its stats."""

    t_ns: np.ndarray  # int64, CLOCK_MONOTONIC of the observer
    level: np.ndarray  # uint8
    blind: np.ndarray  # (n, 2) int64: start_ns, end_ns
    stats: dict


def _read_bytes(path: Path, what: str) -> bytes:
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise RunFailed(f"{what} {path}: missing") from None
    except OSError as e:
        raise RunFailed(f"{what} {path}: cannot read: {e.strerror}") from None
    if not raw:
        raise RunFailed(f"{what} {path}: empty")
    return raw


def _parse_edge_lines(data: bytes, where: str) -> np.ndarray:
    """Parse "<int> <int>\\n" lines into an (n, 2) int64 array, checking every byte."""
    if not data:
        return np.empty((0, 2), dtype=np.int64)
    if not data.endswith(b"\n"):
        raise RunFailed(f"{where}: truncated (last edge line is incomplete)")
    b = np.frombuffer(data, dtype=np.uint8)
    is_space, is_newline = b == ord(" "), b == ord("\n")
    is_digit = (b >= ord("0")) & (b <= ord("9"))
    if not np.all(is_digit | is_space | is_newline):
        bad = int(np.flatnonzero(~(is_digit | is_space | is_newline))[0])
        raise RunFailed(f"{where}: garbled (unexpected byte {data[bad : bad + 1]!r} in edge lines)")
    seps = np.flatnonzero(is_space | is_newline)
    # Every line is exactly: digits, one space, digits, newline.
    kinds = b[seps]
    token_lengths = np.diff(np.concatenate(([-1], seps))) - 1
    if (
        kinds.size % 2
        or np.any(kinds[0::2] != ord(" "))
        or np.any(kinds[1::2] != ord("\n"))
        or np.any(token_lengths < 1)
        or np.any(token_lengths > _MAX_DIGITS)
    ):
        raise RunFailed(f"{where}: garbled (an edge line is not '<t_ns> <level>')")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # old numpy warns instead of raising on bad data
        try:
            values = np.fromstring(data, dtype=np.int64, sep=" ")
        except (ValueError, DeprecationWarning) as e:
            raise RunFailed(f"{where}: garbled ({e})") from None
    if values.size != kinds.size:
        raise RunFailed(f"{where}: garbled (could not read every number)")
    return values.reshape(-1, 2)


def read_self_log(path: Path) -> SelfLog:
    """Read a `# jitterlab-edges v1` log; raise RunFailed if it is not whole and well formed."""
    where = f"self log {path}"
    raw = _read_bytes(path, "self log")
    first_nl = raw.find(b"\n")
    header = _HEADER_RE.fullmatch(raw[:first_nl] if first_nl >= 0 else raw)
    if header is None or first_nl < 0:
        raise RunFailed(f"{where}: garbled header (want '# jitterlab-edges v1 clock=... impl=...')")
    body = raw[first_nl + 1 :]
    if body.startswith(b"#"):
        data, trailer = b"", body
    else:
        cut = body.find(b"\n#")
        if cut < 0:
            raise RunFailed(f"{where}: truncated (no '# end edges=N' line)")
        data, trailer = body[: cut + 1], body[cut + 1 :]
    edges = _parse_edge_lines(data, where)

    fields: dict[bytes, int] = {}
    lines = trailer.split(b"\n")
    if lines[-1] != b"":
        raise RunFailed(f"{where}: truncated (last line is incomplete)")
    for line in lines[:-1]:
        m = _TRAILER_RE.fullmatch(line)
        if m is None or m.group(1) in fields:
            raise RunFailed(f"{where}: garbled trailer line {line[:60]!r}")
        fields[m.group(1)] = int(m.group(2))
    if b"end edges" not in fields or not lines[-2].startswith(b"# end "):
        raise RunFailed(f"{where}: truncated (no '# end edges=N' line)")
    if fields[b"end edges"] != len(edges):
        raise RunFailed(f"{where}: garbled (says {fields[b'end edges']} edges, holds {len(edges)})")
    level = edges[:, 1]
    if np.any((level != 0) & (level != 1)):
        raise RunFailed(f"{where}: garbled (a level is neither 0 nor 1)")
    if header.group(1) == b"none" and len(edges):
        raise RunFailed(f"{where}: garbled (clock=none, yet {len(edges)} timestamped edges)")
    return SelfLog(
        t_ns=np.ascontiguousarray(edges[:, 0]),
        level=level.astype(np.uint8),
        clock=header.group(1).decode(),
        impl=header.group(2).decode(),
        dropped=fields.get(b"dropped", 0),
    )


def read_capture(out_path: Path, what: str = "observer capture") -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(t_ns, level, blind) of a capture in the observer's binary format (JLOBS001: a header with
    the counts, then (t_ns, level) edges and (start_ns, end_ns) blind spans as int64 pairs)."""
    where = f"{what} {out_path}"
    raw = _read_bytes(out_path, what)
    if len(raw) < _OBS_HEADER_BYTES:
        raise RunFailed(f"{where}: truncated ({len(raw)} bytes, header needs {_OBS_HEADER_BYTES})")
    if raw[:8] != OBSERVER_MAGIC:
        raise RunFailed(f"{where}: garbled (magic {raw[:8]!r}, want {OBSERVER_MAGIC!r})")
    n_edges, n_blind = (int(n) for n in np.frombuffer(raw, dtype="<u8", count=2, offset=8))
    want = _OBS_HEADER_BYTES + _OBS_RECORD_BYTES * (n_edges + n_blind)
    if len(raw) < want:
        raise RunFailed(f"{where}: truncated ({len(raw)} bytes, header promises {want})")
    if len(raw) > want:
        raise RunFailed(f"{where}: garbled ({len(raw) - want} bytes after the last record)")
    records = np.frombuffer(raw, dtype="<i8", offset=_OBS_HEADER_BYTES).reshape(-1, 2)
    edges, blind = records[:n_edges], records[n_edges:]
    level = edges[:, 1]
    if np.any((level != 0) & (level != 1)):
        raise RunFailed(f"{where}: garbled (a level is neither 0 nor 1)")
    if np.any(np.diff(edges[:, 0]) < 0):
        raise RunFailed(f"{where}: garbled (edge times go backwards)")
    if np.any(blind[:, 1] < blind[:, 0]):
        raise RunFailed(f"{where}: garbled (a blind interval ends before it starts)")
    # native-endian, contiguous copies
    return edges[:, 0].astype(np.int64), level.astype(np.uint8), blind.astype(np.int64)


def read_json_stats(stats_path: Path, keys: frozenset[str], what: str) -> dict:
    """A program's stats JSON object with (at least) `keys`; RunFailed naming what is wrong."""
    where = f"{what} {stats_path}"
    raw = _read_bytes(stats_path, what)
    try:
        stats = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as e:
        raise RunFailed(f"{where}: garbled JSON ({e})") from None
    if not isinstance(stats, dict):
        raise RunFailed(f"{where}: garbled (not a JSON object)")
    missing = sorted(keys - stats.keys())
    if missing:
        raise RunFailed(f"{where}: garbled (missing keys: {', '.join(missing)})")
    return stats


def read_observer(out_path: Path, stats_path: Path) -> ObserverCapture:
    """Read the observer's binary capture and its stats JSON; raise RunFailed if either is bad."""
    t_ns, level, blind = read_capture(out_path)
    stats = read_json_stats(stats_path, OBSERVER_STATS_KEYS, "observer stats")
    if stats.get("edges", len(t_ns)) != len(t_ns):
        raise RunFailed(
            f"observer stats {stats_path}: says {stats['edges']} edges, capture holds {len(t_ns)}"
        )
    return ObserverCapture(t_ns=t_ns, level=level, blind=blind, stats=stats)
