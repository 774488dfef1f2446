"""CSV captures: `time,level` per line, time in seconds or ns, header optional.

Units: a header names them ("time_ns", "Time [s]", "t (us)"); without one, times written with a
decimal point or exponent are seconds and plain integers are ns (or say --time-unit).
Times are converted exactly (decimal text -> integer ns), never through a float: 1234.567890123 s
keeps its last nanosecond. Levels are 0/1, or volts (thresholded halfway between the extremes).
Rows that alternate 0/1 are an edge list (every row is an edge); otherwise rows are samples and
an edge is where the level changes.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from pathlib import Path

import numpy as np

from jitterlab.errors import UserError
from jitterlab.importers import Capture, edges_from_samples

_SCALE = {"s": 10**9, "ms": 10**6, "us": 10**3, "µs": 10**3, "ns": 1}
_UNIT_IN_HEADER = re.compile(r"(?:^|[\s_\[(])(s|ms|us|µs|ns)(?:$|[\s\])])", re.I)
TIME_UNITS = ("auto", "s", "ms", "us", "ns")


def read_edges_csv(path: Path, *, time_unit: str = "auto") -> Capture:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="strict")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a text CSV file ({exc.reason} at byte {exc.start}); "
                        "export the capture as CSV (time,level) or VCD") from None
    lines = [(i, line.strip()) for i, line in enumerate(text.splitlines(), 1)]
    lines = [(i, s) for i, s in lines if s and not s.startswith(("#", ";", "//"))]
    if not lines:
        raise UserError(f"{path}: no data lines; expected `time,level` rows")
    delim = next((d for d in (",", ";", "\t") if d in lines[0][1]), None)
    time_col, level_col, header_unit = 0, 1, None
    first_fields = _split(lines[0][1], delim)
    if not _is_number(first_fields[0]):
        lineno, _ = lines.pop(0)
        names = [f.strip().strip('"').lower() for f in first_fields]
        time_col = next((k for k, n in enumerate(names) if "time" in n or n in ("t", "s")), 0)
        level_col = next((k for k in range(len(names)) if k != time_col), None)
        if level_col is None:
            raise UserError(f"{path}:{lineno}: header {first_fields} has one column; "
                            "expected `time,level`")
        match = _UNIT_IN_HEADER.search(names[time_col])
        header_unit = match.group(1).lower() if match else None
        if not lines:
            raise UserError(f"{path}: only a header, no data lines")
    times, values = [], []
    need = max(time_col, level_col) + 1
    for lineno, line in lines:
        fields = _split(line, delim)
        if len(fields) < need:
            raise UserError(f"{path}:{lineno}: {len(fields)} field(s) where {need} are expected "
                            f"({line!r}); the file may be truncated")
        t_text, v_text = fields[time_col].strip('"'), fields[level_col].strip('"')
        try:
            times.append(Decimal(t_text))
            values.append(float(v_text))
        except (InvalidOperation, ValueError):
            raise UserError(f"{path}:{lineno}: cannot read {line!r} as time,level numbers") from None
        if not times[-1].is_finite():
            raise UserError(f"{path}:{lineno}: time {t_text!r} is not a finite number")
    unit = time_unit if time_unit != "auto" else header_unit or _guess_unit(lines, time_col, delim)
    scale = _SCALE[unit]
    t_ns = np.array([int((t * scale).to_integral_value()) for t in times], dtype=np.int64)
    bad = np.flatnonzero(t_ns[1:] <= t_ns[:-1])
    if len(bad):
        raise UserError(f"{path}:{lines[bad[0] + 1][0]}: time does not increase "
                        f"({times[bad[0]]} then {times[bad[0] + 1]} {unit}); rows must be in time order")
    v = np.asarray(values)
    alternating = len(v) > 1 and np.isin(v, (0.0, 1.0)).all() and (v[1:] != v[:-1]).all()
    t_edges, level = edges_from_samples(t_ns, v, first_is_edge=bool(alternating))
    return Capture(t_edges, level, str(path))


def _split(line: str, delim: str | None) -> list[str]:
    return [f.strip() for f in (line.split(delim) if delim else line.split())]


def _is_number(text: str) -> bool:
    try:
        float(text.strip('"'))
    except ValueError:
        return False
    return True


def _guess_unit(lines: list[tuple[int, str]], col: int, delim: str | None) -> str:
    fractional = any(re.search(r"[.eE]", _split(line, delim)[col]) for _, line in lines[:1000])
    return "s" if fractional else "ns"
