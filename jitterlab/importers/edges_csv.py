"""CSV captures: `time,level` per line, time in seconds or ns, header optional.

Units: a header names them in the words of the tools that write captures (time_units.py: sigrok's
"microseconds", Saleae's "Time [s]", a scope's row of units under its header, "time_ns", "t (us)");
a header that names no unit, or one jitterlab does not know, is an error (or say --time-unit). A
file without a header: times written with a decimal point or exponent are seconds and plain integers
are ns.
Times are converted exactly (decimal text -> integer ns), never through a float: 1234.567890123 s
keeps its last nanosecond; digits below 1 ns are rounded to the nearest ns (half to even) and
the import says so.

Kind: an *edge list* has one row per edge (level 0/1 after the edge); a *sample* trace one row
per sample (0/1, or volts thresholded halfway between the extremes) and an edge where the level
changes. The kind comes from --kind, else from the header (a level column named for volts or
samples -- "V", "[V]", "volts", "sample" -- is a sample trace), else the file is an edge list;
never from the data. A level that repeats in an edge list means the instrument lost an edge
there: a warning names the lines, the gap becomes a blind span and counts as a missed edge.

Speed: pyarrow reads the file in blocks (times as decimal128 scaled to ns, whose integer is the
time in ns); memory stays at about 9 bytes per edge plus one block. Files pyarrow cannot take
(whitespace-separated, comment lines between rows, a damaged row) are read line by line, which
also finds the line to name in an error.
"""

from __future__ import annotations

import os
import re
from array import array
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from jitterlab.importers import time_units
from jitterlab.importers.capture import Capture, excerpt
from jitterlab.model.errors import UserError

# a level column of samples, not edges: volts, samples, libsigrok's "logic" (one row per sample)
_SAMPLES_IN_HEADER = re.compile(r"(?:^|[\s_\[(])(v|volts?|voltage|samples?|logic)(?:$|[\s\])_])", re.I)
_NUMBER = re.compile(r"^\s*([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?\s*$")
_COMMENT = (b"#", b";", b"//")
TIME_UNITS = ("auto", *time_units.UNITS)
_BLOCK_BYTES = 1 << 20  # larger blocks made pyarrow hold more memory (4 MiB: 17 B per edge), no faster
_MAX_WARNED_LINES = 5


_COMMENT_TEXT = tuple(c.decode() for c in _COMMENT)


class _Layout:
    """What the first lines say: where data starts, delimiter, columns, unit, kind."""

    def __init__(self, path: Path, time_unit: str, kind: str) -> None:
        self.path = path
        with open(path, "rb") as f:
            head = f.read(1 << 16)
        nul = head.find(b"\0")
        if nul >= 0:
            raise UserError(f"{path}: not a text CSV file (byte {nul} is NUL); "
                            "export the capture as CSV (time,level) or VCD")
        lines = head.split(b"\n")
        if len(head) == 1 << 16:
            lines = lines[:-1]  # the last one may be cut
        self.skip = 0  # lines before the first data row (comments, blanks, header)
        first: tuple[int, str] | None = None
        for i, raw in enumerate(lines):
            text = _decode(path, i + 1, raw).strip()
            if text and not text.startswith(_COMMENT_TEXT):
                first = (i, text)
                break
        if first is None:
            raise UserError(f"{path}: no data lines; expected `time,level` rows")
        lineno, text = first
        # libsigrok's CSV has one row per sample (deduplicated ones too read right as samples)
        self.sigrok_kind = "samples" if any(b"libsigrok" in raw for raw in lines[:lineno]) else None
        self.delim = next((d for d in (",", ";", "\t") if d in text), None)
        fields = _split(text, self.delim)
        self.time_col, self.level_col, header_unit, header_kind = 0, 1, None, None
        self.skip = lineno
        header = not _is_number(fields[0])
        said: tuple[int, str] | None = None  # (line, text) of the header row that names the unit
        if header:
            names = [f.strip().strip('"').lower() for f in fields]
            self.time_col = next((k for k, n in enumerate(names) if "time" in n or n in ("t", "s")
                                  or n in time_units.WORDS), 0)
            level_col = next((k for k in range(len(names)) if k != self.time_col), None)
            if level_col is None:
                raise UserError(f"{path}:{lineno + 1}: header {excerpt(text)} has one column; "
                                "expected `time,level`")
            self.level_col = level_col
            self.skip = lineno + 1
            header_unit, header_kind = self._names([f.strip().strip('"') for f in fields], time_unit)
            said = (lineno + 1, text) if header_unit else None
            units_row = self._units_row(lines, time_unit, header_unit)  # a scope's: second,Volt
            if units_row is not None:
                if header_unit is None and units_row[0] is not None:
                    said = (self.skip, _decode(path, self.skip, lines[self.skip - 1]).strip())
                header_unit = header_unit or units_row[0]
                header_kind = header_kind or units_row[1]
        self.n_cols = len(fields)
        self.kind = kind if kind != "auto" else header_kind or self.sigrok_kind or "edges"
        data = [_decode(path, i + 1, raw).strip() for i, raw in enumerate(lines[self.skip:1000])]
        if time_unit == "auto" and header_unit is None and any(
                d and not d.startswith(_COMMENT_TEXT) for d in data):
            self._refuse_unknown_unit((lineno + 1, text) if header else None)
        if time_unit != "auto" and said is not None and header_unit != time_unit.replace("µ", "u"):
            # the option would silently win over a unit the file's writer named
            raise UserError(f"{path}:{said[0]}: --time-unit {time_unit} contradicts the header, which says "
                            f"the times are in {header_unit} ({excerpt(said[1])}); leave out --time-unit, "
                            f"or give --time-unit {header_unit}")
        unit = time_unit if time_unit != "auto" else header_unit or _guess_unit(data, self)
        self.unit = unit.replace("µ", "u")
        self.digits = time_units.DIGITS[self.unit]

    def _names(self, names: list[str], time_unit: str) -> tuple[str | None, str | None]:
        """The unit the time column's name says (an unknown word is an error unless --time-unit
        says the unit) and the kind the level column's name says."""
        unit = None
        try:
            unit = time_units.unit_in(names[self.time_col])
        except UserError as exc:
            if time_unit == "auto":
                raise UserError(f"{self.path}:{self.skip}: {exc}") from None
        kind = "samples" if _SAMPLES_IN_HEADER.search(names[self.level_col]) else None
        return unit, kind or self.sigrok_kind

    def _units_row(self, lines: list[bytes], time_unit: str,
                   header_unit: str | None) -> tuple[str | None, str | None] | None:
        """A row of units under the header ("second,Volt"): its (unit, kind), and skipped. A word
        there that is no time unit is an error when nothing else says the unit."""
        for i in range(self.skip, len(lines)):
            text = _decode(self.path, i + 1, lines[i]).strip()
            if not text or text.startswith(_COMMENT_TEXT):
                continue
            fields = [f.strip().strip('"') for f in _split(text, self.delim)]
            if len(fields) <= max(self.time_col, self.level_col) or _is_number(fields[self.time_col]):
                return None
            self.skip = i + 1
            unit = None
            try:
                unit = time_units.unit_of_units_row(fields[self.time_col], text)
            except UserError as exc:
                if time_unit == "auto" and header_unit is None:
                    raise UserError(f"{self.path}:{self.skip}: {exc}") from None
            kind = "samples" if _SAMPLES_IN_HEADER.search(fields[self.level_col]) else None
            return unit, kind or self.sigrok_kind
        return None

    def _refuse_unknown_unit(self, header: tuple[int, str] | None) -> None:
        """Never a silent default where the file's writer knew the unit: a header without one, or
        libsigrok's CSV without its header line."""
        if header is not None:
            raise UserError(f"{self.path}:{header[0]}: the header {excerpt(header[1])} does not say the "
                            f"unit of its times; give --time-unit ({', '.join(time_units.UNITS)}) or name it "
                            "in the header (time_ns, 'Time [s]')")
        if self.sigrok_kind:
            raise UserError(f"{self.path}: libsigrok's CSV without its header line does not say the unit of "
                            "its times; export again with sigrok-cli -O csv:time=true (its default labels "
                            "name the unit) or give --time-unit")


def read_edges_csv(path: Path, *, time_unit: str = "auto", kind: str = "auto") -> Capture:
    """Read a CSV capture (see the module docstring for units, kinds and lost edges)."""
    layout = _Layout(Path(path), time_unit, kind)
    try:
        return _read(layout, _FastReader(layout))
    except _NotFast:
        return _read(layout, _SlowReader(layout))


def _read(layout: _Layout, reader: _FastReader | _SlowReader) -> Capture:
    path = layout.path
    warnings: list[str] = []
    if layout.digits < 0:
        warnings.append(f"{path}: times are in {layout.unit}; rounded to the nearest ns (half to even)")

    def run(consume):
        try:
            return consume(reader.batches(0))
        except _NeedsFiner:
            warnings.append(f"{path}: times have digits below 1 ns; rounded to the nearest ns "
                            "(half to even)")
            return consume(reader.batches(9))

    if layout.kind == "samples":
        lo, hi = run(_extremes)
        threshold = 0.5 if lo >= 0 and hi <= 1 else (lo + hi) / 2
        t, level = run(lambda b: _sample_edges(b, threshold, reader))
    else:
        t, level = run(lambda b: _edges(b, reader))
    if len(t) == 0:
        raise UserError(f"{path}: only a header, no data lines")
    blind = np.empty((0, 2), dtype=np.int64)
    if layout.kind == "edges":
        same = np.flatnonzero(level[1:] == level[:-1])
        if len(same):
            # an odd number of edges was lost strictly between the two rows
            blind = np.stack([t[same] + 1, np.maximum(t[same + 1] - 1, t[same] + 1)], axis=1)
            lines = [f"{reader.line_of(int(r))}-{reader.line_of(int(r) + 1)}"
                     for r in same[:_MAX_WARNED_LINES]]
            more = f" and {len(same) - len(lines)} more" if len(same) > len(lines) else ""
            warnings.append(f"{path}: the level repeats on lines {', '.join(lines)}{more}: the "
                            f"capture lost at least one edge in each of these {len(same)} "
                            "gap(s); the periods across them are excluded and the lost edges "
                            "counted in missed_edges")
    return Capture(t, level, str(path), blind_ticks=blind, warnings=tuple(warnings))


Batches = Iterator[tuple[np.ndarray, np.ndarray]]  # (t_ns int64, level float64) per block


def _edges(batches: Batches, reader) -> tuple[np.ndarray, np.ndarray]:
    """Every row is an edge: levels must be 0/1 and times increase. The output arrays are
    sized once from the file's line count, so memory is 9 bytes per edge, not twice that."""
    capacity = _count_lines(reader.layout.path) + 1
    t_out = np.empty(capacity, dtype=np.int64)
    l_out = np.empty(capacity, dtype=np.uint8)
    rows = 0
    last = None
    for t, v in batches:
        odd = np.flatnonzero((v != 0) & (v != 1))
        if len(odd):
            row = rows + int(odd[0])
            raise UserError(f"{reader.layout.path}:{reader.line_of(row)}: level {v[odd[0]]:g} in "
                            "an edge list (levels are 0 or 1); if the rows are samples of a "
                            "voltage, give --kind samples")
        _check_increasing(t, last, rows, reader)
        if len(t):
            last = int(t[-1])
        t_out[rows : rows + len(t)] = t
        l_out[rows : rows + len(t)] = v
        rows += len(t)
    return t_out[:rows], l_out[:rows]


def _count_lines(path: Path) -> int:
    count = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 24):
            count += chunk.count(b"\n")
    return count


def _extremes(batches: Batches) -> tuple[float, float]:
    lo, hi = np.inf, -np.inf
    for _, v in batches:
        if len(v):
            lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    return lo, hi


def _sample_edges(batches: Batches, threshold: float, reader) -> tuple[np.ndarray, np.ndarray]:
    """Rows are samples: an edge where the thresholded level changes (the first row is the
    initial state). Only the edges are kept, so memory follows edges, not samples."""
    t_parts, l_parts = [], []
    rows = 0
    last_t = None
    prev: int | None = None
    for t, v in batches:
        _check_increasing(t, last_t, rows, reader)
        if len(t) == 0:
            continue
        last_t = int(t[-1])
        level = (v > threshold).astype(np.uint8)
        change = np.empty(len(level), dtype=bool)
        change[1:] = level[1:] != level[:-1]
        change[0] = prev is not None and level[0] != prev
        prev = int(level[-1])
        t_parts.append(t[change])
        l_parts.append(level[change])
        rows += len(t)
    return _join(t_parts, np.int64), _join(l_parts, np.uint8)


def _check_increasing(t: np.ndarray, last: int | None, rows: int, reader) -> None:
    bad = np.flatnonzero(t[1:] <= t[:-1])
    if last is not None and len(t) and t[0] <= last:
        row, before = rows, last
    elif len(bad):
        row, before = rows + int(bad[0]) + 1, int(t[bad[0]])
    else:
        return
    now = int(t[row - rows])
    fix = "rows must be in time order"
    if reader.layout.digits < 0 and now == before:  # distinct in ps, one ns once rounded
        fix = (f"times in {reader.layout.unit} less than 1 ns apart are one time at jitterlab's 1 ns "
               "resolution; capture at 1 GHz or less")
    raise UserError(f"{reader.layout.path}:{reader.line_of(row)}: time does not increase "
                    f"({before} then {now} ns); {fix}")


def _join(parts: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(parts) if parts else np.empty(0, dtype)


class _NotFast(Exception):
    """pyarrow cannot read this file as it is; the line-by-line reader takes over."""


class _NeedsFiner(Exception):
    """Times have digits below 1 ns: read again with 9 more digits and round."""


class _FastReader:
    """Blocks of (t_ns int64, level float64) read by pyarrow."""

    def __init__(self, layout: _Layout) -> None:
        if layout.delim is None or layout.digits < 0:  # times finer than ns: rounded line by line
            raise _NotFast
        self.layout = layout

    def batches(self, digits_extra: int) -> Batches:
        lay = self.layout
        names = [f"c{i}" for i in range(lay.n_cols)]
        tname, lname = names[lay.time_col], names[lay.level_col]
        try:
            reader = pacsv.open_csv(
                pa.OSFile(os.fsencode(lay.path)) if isinstance(lay.path, str) else
                pa.OSFile(os.fsencode(str(lay.path))),
                read_options=pacsv.ReadOptions(skip_rows=lay.skip, column_names=names,
                                               block_size=_BLOCK_BYTES, use_threads=False),
                parse_options=pacsv.ParseOptions(delimiter=lay.delim, ignore_empty_lines=True),
                convert_options=pacsv.ConvertOptions(
                    column_types={tname: pa.decimal128(38, lay.digits + digits_extra),
                                  lname: pa.float64()},
                    include_columns=[tname, lname]),
            )
            for batch in reader:
                t = batch.column(tname)
                if t.null_count or batch.column(lname).null_count:
                    raise _NotFast  # an empty field: the line reader names the line
                if digits_extra:
                    t = pc.round(t, ndigits=lay.digits, round_mode="half_to_even").cast(
                        pa.decimal128(38, lay.digits))
                yield _unscaled_int64(t, lay.path), batch.column(lname).to_numpy()
        except pa.ArrowInvalid as exc:
            if "Rescaling Decimal" in str(exc) and not digits_extra:
                raise _NeedsFiner from None
            raise _NotFast from None  # never echo pyarrow's message: it quotes whole rows

    def line_of(self, row: int) -> int:
        """1-based line of data row `row` (pyarrow skipped empty lines): one scan of the file."""
        line = self.layout.skip
        seen = -1
        with open(self.layout.path, "rb") as f:
            for i, raw in enumerate(f):
                if i < line:
                    continue
                if raw.strip(b"\r\n"):
                    seen += 1
                    if seen == row:
                        return i + 1
        return line + row + 1


def _unscaled_int64(t: pa.ChunkedArray | pa.Array, path: Path) -> np.ndarray:
    """The integers behind decimal128 values (the time in ns), which must fit in int64."""
    chunks = t.chunks if isinstance(t, pa.ChunkedArray) else [t]
    out = []
    for chunk in chunks:
        words = np.frombuffer(chunk.buffers()[1], dtype=np.int64)[2 * chunk.offset:]
        words = words[: 2 * len(chunk)].reshape(-1, 2)
        low, high = words[:, 0], words[:, 1]
        if (high != (low >> 63)).any():
            raise UserError(f"{path}: a time does not fit in 64-bit nanoseconds (292 years)")
        out.append(low.copy())
    return _join(out, np.int64)


class _SlowReader:
    """Line by line, exact integers: for files pyarrow does not take, and to name bad lines."""

    def __init__(self, layout: _Layout) -> None:
        self.layout = layout
        self._lines = array("q")

    def batches(self, digits_extra: int) -> Batches:
        lay = self.layout
        need = max(lay.time_col, lay.level_col) + 1
        self._lines = array("q")
        times, values = array("q"), array("d")
        with open(lay.path, "rb") as f:
            for lineno, raw in enumerate(f, 1):
                if lineno <= lay.skip:
                    continue
                line = _decode(lay.path, lineno, raw).strip()
                if not line or line.startswith(_COMMENT_TEXT):
                    continue
                fields = _split(line, lay.delim)
                if len(fields) < need:
                    raise UserError(f"{lay.path}:{lineno}: {len(fields)} field(s) where {need} "
                                    f"are expected ({excerpt(line)}); the file may be truncated")
                t_text, v_text = fields[lay.time_col].strip('"'), fields[lay.level_col].strip('"')
                ns = _decimal_ns(t_text, lay.digits)
                try:
                    v = float(v_text)
                except ValueError:
                    v = None
                if ns is None or v is None or v != v:
                    raise UserError(f"{lay.path}:{lineno}: cannot read {excerpt(line)} as "
                                    "time,level numbers")
                times.append(ns)
                values.append(v)
                self._lines.append(lineno)
                if len(times) == 1 << 16:
                    yield np.array(times, dtype=np.int64), np.array(values)
                    times, values = array("q"), array("d")
        if len(times):
            yield np.array(times, dtype=np.int64), np.array(values)

    def line_of(self, row: int) -> int:
        return int(self._lines[row])


def _decimal_ns(text: str, digits: int) -> int | None:
    """Decimal text in a unit of 10**digits ns -> int ns, halves to even; None if no number."""
    m = _NUMBER.match(text)
    if not m or not (m.group(2) or m.group(3)):
        return None
    sign, whole, frac, exp = m.group(1), m.group(2) or "", m.group(3) or "", m.group(4)
    scale = digits + (int(exp) if exp else 0) - len(frac)  # value = int(whole frac) * 10**scale
    mantissa = int(whole + frac or "0")
    if scale >= 0:
        ns = mantissa * 10**scale
    else:
        q, r = divmod(mantissa, 10**-scale)
        half = 10**-scale
        ns = q + (1 if 2 * r > half or (2 * r == half and q % 2) else 0)
    ns = -ns if sign == "-" else ns
    return ns if -(2**63) <= ns < 2**63 else None


def _decode(path: Path, lineno: int, raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}:{lineno}: not a text CSV file ({exc.reason} at byte {exc.start} "
                        "of the line); export the capture as CSV (time,level) or VCD") from None


def _split(line: str, delim: str | None) -> list[str]:
    return [f.strip() for f in (line.split(delim) if delim else line.split())]


def _is_number(text: str) -> bool:
    try:
        float(text.strip('"'))
    except ValueError:
        return False
    return True


def _guess_unit(data: list[str], layout: _Layout) -> str:
    for line in data:
        if not line or line.startswith(_COMMENT_TEXT):
            continue
        fields = _split(line, layout.delim)
        if len(fields) > layout.time_col and re.search(r"[.eE]", fields[layout.time_col]):
            return "s"
    return "ns"
