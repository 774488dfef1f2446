"""VCD captures as sigrok writes them: one or more 1-bit wires, `#time` then value changes.

The first value of the chosen signal (from $dumpvars or the first timestamp) is its initial
state, not an edge. x/z values are ignored. Times stay integer ticks of $timescale: a capture
finer than 1 ns (10 ps, 1 ps, ...) is analysed in its own ticks and its metrics keep that
resolution; only the raw series stored for figures and export is rounded to the nearest ns.
A timescale of 1 ns or coarser is converted to ns exactly.

The body is read by a compiled byte scanner over a memory map of the file, twice (count,
then fill): memory is 9 bytes per edge of the chosen signal, whatever the file holds.
"""

from __future__ import annotations

from pathlib import Path

import numba
import numpy as np

from jitterlab.importers.capture import Capture, excerpt
from jitterlab.model.errors import UserError

_FS = {"s": 10**15, "ms": 10**12, "us": 10**9, "ns": 10**6, "ps": 10**3, "fs": 1}
_SKIP_SECTIONS = {"$comment", "$date", "$version", "$scope", "$upscope"}
_HEADER_END = b"$enddefinitions"
# scanner status codes -> what went wrong at the returned byte offset
_OK, _BAD_TIME, _BACKWARDS, _NO_TIME, _VECTOR_END, _UNKNOWN = range(6)


def read_vcd(path: Path, *, signal: str | None = None) -> Capture:
    path = Path(path)
    if path.stat().st_size == 0:
        raise UserError(f"{path}: truncated VCD: no $enddefinitions (the file is empty)")
    buf = np.memmap(path, dtype=np.uint8, mode="r")
    end = _find(buf, _HEADER_END)
    # without $enddefinitions the header reader names what is missing (in the first MiB)
    header_text = _ascii(path, bytes(buf[: end if end >= 0 else 1 << 20]), 0)
    tokens = [(i, tok) for i, line in enumerate(header_text.splitlines(), 1)
              for tok in line.split()]
    if end >= 0:
        tokens.append((header_text.count("\n") + 1, "$enddefinitions"))
    tick_fs, timescale, wires = _header(path, tokens)
    body_at = _find(buf, b"$end", end + len(_HEADER_END))
    if body_at < 0:
        raise UserError(f"{path}: $enddefinitions without $end; the file is truncated")
    ident, name = _choose(path, wires, signal)
    status, at, times, values = _scan(buf, body_at + 4, np.frombuffer(ident.encode(), np.uint8))
    del buf
    if status != _OK:
        _raise_at(path, status, at)
    if len(times) < 2:
        raise UserError(f"{path}: signal {name!r} changes {max(len(times) - 1, 0)} times; "
                        "nothing to measure (wrong --signal, or the capture is empty)")
    ticks_per_ns, ns_per_tick = (10**6 // tick_fs, 1) if tick_fs < 10**6 else (1, tick_fs // 10**6)
    if ns_per_tick > 1:
        if int(times[-1]) > np.iinfo(np.int64).max // ns_per_tick:
            raise UserError(f"{path}: times beyond 292 years at $timescale {timescale}")
        times *= ns_per_tick
    t, level = times[1:], values[1:]  # the first value is the initial state, not an edge
    return Capture(t, level, str(path), ticks_per_ns=ticks_per_ns, resolution=timescale)


def _find(buf: np.ndarray, word: bytes, start: int = 0) -> int:
    """Offset of `word` in the mapped file from `start`, or -1; reads 16 MiB at a time."""
    step = 1 << 24
    for at in range(start, len(buf), step - len(word)):
        found = bytes(buf[at : at + step]).find(word)
        if found >= 0:
            return at + found
    return -1


def _ascii(path: Path, data: bytes, offset: int) -> str:
    try:
        return data.decode("ascii")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a VCD text file (byte {offset + exc.start} is not "
                        "ASCII)") from None


def _choose(path: Path, wires: list[tuple[str, str, int]], signal: str | None) -> tuple[str, str]:
    wanted = [w for w in wires if (w[1] == signal if signal else w[2] == 1)]
    if not wanted:
        names = ", ".join(f"{name} ({size} bit)" for _, name, size in wires) or "none"
        what = f"--signal {signal!r}: no such signal" if signal else "no 1-bit signal"
        raise UserError(f"{path}: {what}; signals in the file: {names}")
    ident, name, size = wanted[0]
    if size != 1:
        raise UserError(f"{path}: signal {name!r} has {size} bits; choose a 1-bit signal with "
                        "--signal")
    return ident, name


def _header(path: Path, tokens: list[tuple[int, str]]) -> tuple[int, str, list]:
    """(tick in fs, the timescale as written, [(ident, name, bits)])."""
    tick_fs, timescale, wires, k = 10**6, "1 ns", [], 0
    declared: int | None = None  # the line of the $timescale read, if any
    while k < len(tokens):
        lineno, tok = tokens[k]
        if tok == "$enddefinitions":
            return tick_fs, timescale, wires
        if tok in _SKIP_SECTIONS:
            k = _find_end(path, tokens, k) + 1
        elif tok == "$timescale":
            end = _find_end(path, tokens, k)
            spec = "".join(t for _, t in tokens[k + 1:end])
            digits = spec.rstrip("afpnumµs")
            unit = spec[len(digits):].replace("µ", "u")
            if digits not in ("1", "10", "100") or unit not in _FS:
                raise UserError(f"{path}:{lineno}: cannot read $timescale {excerpt(spec)} "
                                "(expected 1, 10 or 100 and s, ms, us, ns, ps or fs)")
            if declared is not None:  # which one the instrument meant, no reader can tell
                raise UserError(f"{path}: $timescale on lines {declared} and {lineno} ({timescale}, then "
                                f"{digits} {unit}); a VCD has one time scale: keep the one the instrument "
                                "used and import again")
            declared = lineno
            tick_fs, timescale = int(digits) * _FS[unit], f"{digits} {unit}"
            k = end + 1
        elif tok == "$var":
            end = _find_end(path, tokens, k)
            fields = [t for _, t in tokens[k + 1:end]]
            if len(fields) < 4 or not fields[1].isdigit():
                raise UserError(f"{path}:{lineno}: cannot read $var {excerpt(' '.join(fields))}; "
                                "expected `$var wire 1 ! D0 $end`")
            wires.append((fields[2], fields[3], int(fields[1])))
            k = end + 1
        elif tok.startswith("$"):
            k = _find_end(path, tokens, k) + 1
        else:
            raise UserError(f"{path}:{lineno}: unexpected {excerpt(tok)} in the VCD header")
    raise UserError(f"{path}: truncated VCD: no $enddefinitions (the header is incomplete)")


def _find_end(path: Path, tokens: list[tuple[int, str]], k: int) -> int:
    for j in range(k + 1, len(tokens)):
        if tokens[j][1] in ("$end", "$enddefinitions"):
            if tokens[j][1] == "$end":
                return j
            break
    raise UserError(f"{path}:{tokens[k][0]}: {tokens[k][1]} without $end; the file is truncated")


def _raise_at(path: Path, status: int, at: int) -> None:
    with open(path, "rb") as f:
        lineno = 1
        left = at
        while left > 0:
            chunk = f.read(min(left, 1 << 24))
            if not chunk:
                break
            lineno += chunk.count(b"\n")
            left -= len(chunk)
        tok = f.read(4 * 80).split(maxsplit=1)
    shown = excerpt(tok[0] if tok else b"")
    why = {_BAD_TIME: f"bad timestamp {shown}; the file is damaged",
           _BACKWARDS: f"time goes back at {shown}",
           _NO_TIME: "value change before the first #time",
           _VECTOR_END: f"vector value {shown} without a signal; the file is truncated",
           _UNKNOWN: f"cannot read {shown}; the file is damaged"}[status]
    raise UserError(f"{path}:{lineno}: {why}")


def _scan(buf: np.ndarray, pos: int, ident: np.ndarray) -> tuple[int, int, np.ndarray,
                                                                   np.ndarray]:
    """(status, byte offset of the trouble, times, values) of the edges of `ident`: its first
    0/1 value (the initial state) and then every change of it. Two passes -- count, then fill
    arrays of the exact size -- keep memory at 9 bytes per edge."""
    empty_t, empty_v = np.empty(0, dtype=np.int64), np.empty(0, dtype=np.uint8)
    status, at, count = _scan_pass(buf, pos, ident, empty_t, empty_v, False)
    if status != _OK:
        return status, at, empty_t, empty_v
    times, values = np.empty(count, dtype=np.int64), np.empty(count, dtype=np.uint8)
    _scan_pass(buf, pos, ident, times, values, True)
    return _OK, 0, times, values


@numba.njit(cache=True, nogil=True)
def _scan_pass(buf, pos, ident, times, values, fill):
    """One pass of the body: (status, offset, number of edges); stores them when `fill`."""
    n = buf.shape[0]
    m = ident.shape[0]
    w = 0
    last = -1
    now = -1
    limit = (np.iinfo(np.int64).max - 9) // 10
    while True:
        while pos < n and buf[pos] <= 32:
            pos += 1
        if pos >= n:
            break
        start = pos
        while pos < n and buf[pos] > 32:
            pos += 1
        head = buf[start]
        length = pos - start
        if head == 35:  # '#': a timestamp
            if length == 1:
                return _BAD_TIME, start, w
            t = 0
            for k in range(start + 1, pos):
                c = buf[k] - 48
                if c > 9 or t > limit:  # c is unsigned: bytes below '0' wrap around
                    return _BAD_TIME, start, w
                t = t * 10 + c
            if t < now:
                return _BACKWARDS, start, w
            now = t
        elif head == 36:  # '$': $dumpvars, $end, ... carry nothing; $comment runs to $end
            if length == 8 and buf[start + 1] == 99 and buf[start + 2] == 111:  # $comment
                while True:
                    while pos < n and buf[pos] <= 32:
                        pos += 1
                    s2 = pos
                    while pos < n and buf[pos] > 32:
                        pos += 1
                    if pos >= n or (pos - s2 == 4 and buf[s2 + 1] == 101 and buf[s2 + 2] == 110):
                        break
        elif head in (48, 49, 120, 88, 122, 90) and length > 1:  # 0 1 x X z Z + ident
            if length - 1 == m and (head == 48 or head == 49):
                same = True
                for k in range(m):
                    if buf[start + 1 + k] != ident[k]:
                        same = False
                        break
                if same:
                    if now < 0:
                        return _NO_TIME, start, w
                    value = head - 48
                    if value != last:  # repeated values are no edge
                        if fill:
                            times[w] = now
                            values[w] = value
                        w += 1
                        last = value
        elif head in (98, 66, 114, 82):  # b B r R: a vector value, then its identifier
            while pos < n and buf[pos] <= 32:
                pos += 1
            if pos >= n:
                return _VECTOR_END, start, w
            while pos < n and buf[pos] > 32:
                pos += 1
        else:
            return _UNKNOWN, start, w
    return _OK, 0, w
