"""VCD captures as sigrok writes them: one or more 1-bit wires, `#time` then value changes.

The first value of the chosen signal (from $dumpvars or the first timestamp) is its initial
state, not an edge. x/z values are ignored. Times are scaled by $timescale exactly.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import numpy as np

from jitterlab.errors import UserError
from jitterlab.importers import Capture, edges_from_samples

_UNITS = {"s": Fraction(10**9), "ms": Fraction(10**6), "us": Fraction(10**3), "ns": Fraction(1),
          "ps": Fraction(1, 10**3), "fs": Fraction(1, 10**6)}
_SKIP_SECTIONS = {"$comment", "$date", "$version", "$scope", "$upscope"}


def read_vcd(path: Path, *, signal: str | None = None) -> Capture:
    try:
        text = Path(path).read_text(encoding="ascii")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not a VCD text file (byte {exc.start} is not ASCII)") from None
    tokens = [(i, tok) for i, line in enumerate(text.splitlines(), 1) for tok in line.split()]
    scale, wires, body = _header(path, tokens)
    wanted = [w for w in wires if (w[1] == signal if signal else w[2] == 1)]
    if not wanted:
        names = ", ".join(f"{name} ({size} bit)" for _, name, size in wires) or "none"
        what = f"--signal {signal!r}: no such signal" if signal else "no 1-bit signal"
        raise UserError(f"{path}: {what}; signals in the file: {names}")
    ident, name, size = wanted[0]
    if size != 1:
        raise UserError(f"{path}: signal {name!r} has {size} bits; choose a 1-bit signal with --signal")
    times, values = _changes(path, tokens[body:], ident, scale)
    if len(times) < 2:
        raise UserError(f"{path}: signal {name!r} changes {max(len(times) - 1, 0)} times; "
                        "nothing to measure (wrong --signal, or the capture is empty)")
    t_ns, level = edges_from_samples(np.array(times, dtype=np.int64), np.array(values),
                                     first_is_edge=False)
    return Capture(t_ns, level, str(path))


def _header(path: Path, tokens: list[tuple[int, str]]) -> tuple[Fraction, list, int]:
    scale, wires, k = Fraction(1), [], 0
    while k < len(tokens):
        lineno, tok = tokens[k]
        if tok == "$enddefinitions":
            end = _find_end(path, tokens, k)
            return scale, wires, end + 1
        if tok in _SKIP_SECTIONS:
            k = _find_end(path, tokens, k) + 1
        elif tok == "$timescale":
            end = _find_end(path, tokens, k)
            spec = "".join(t for _, t in tokens[k + 1:end])
            digits = spec.rstrip("afpnumµs")
            unit = spec[len(digits):].replace("µ", "u")
            if digits not in ("1", "10", "100") or unit not in _UNITS:
                raise UserError(f"{path}:{lineno}: cannot read $timescale {spec!r} "
                                "(expected 1, 10 or 100 and s, ms, us, ns, ps or fs)")
            scale = int(digits) * _UNITS[unit]
            k = end + 1
        elif tok == "$var":
            end = _find_end(path, tokens, k)
            fields = [t for _, t in tokens[k + 1:end]]
            if len(fields) < 4 or not fields[1].isdigit():
                raise UserError(f"{path}:{lineno}: cannot read $var {' '.join(fields)!r}; "
                                "expected `$var wire 1 ! D0 $end`")
            wires.append((fields[2], fields[3], int(fields[1])))
            k = end + 1
        elif tok.startswith("$"):
            k = _find_end(path, tokens, k) + 1
        else:
            raise UserError(f"{path}:{lineno}: unexpected {tok!r} in the VCD header")
    raise UserError(f"{path}: truncated VCD: no $enddefinitions (the header is incomplete)")


def _find_end(path: Path, tokens: list[tuple[int, str]], k: int) -> int:
    for j in range(k + 1, len(tokens)):
        if tokens[j][1] == "$end":
            return j
    raise UserError(f"{path}:{tokens[k][0]}: {tokens[k][1]} without $end; the file is truncated")


def _changes(path: Path, tokens: list[tuple[int, str]], ident: str,
             scale: Fraction) -> tuple[list[int], list[int]]:
    times: list[int] = []
    values: list[int] = []
    now: int | None = None
    k = 0
    while k < len(tokens):
        lineno, tok = tokens[k]
        k += 1
        head = tok[0]
        if head == "#":
            try:
                t = int(tok[1:])
            except ValueError:
                raise UserError(f"{path}:{lineno}: bad timestamp {tok!r}; the file is damaged") from None
            if now is not None and t < now:
                raise UserError(f"{path}:{lineno}: time goes back ({tok} after #{now})")
            now = t
        elif tok in ("$dumpvars", "$dumpall", "$dumpon", "$dumpoff", "$end"):
            continue
        elif head in "01xXzZ" and len(tok) > 1:
            if tok[1:] == ident and head in "01":
                if now is None:
                    raise UserError(f"{path}:{lineno}: value change before the first #time")
                t_ns = now * scale
                times.append(round(t_ns))
                values.append(int(head))
        elif head in "bBrR":
            if k >= len(tokens):
                raise UserError(f"{path}:{lineno}: vector value {tok!r} without a signal; "
                                "the file is truncated")
            k += 1
        else:
            raise UserError(f"{path}:{lineno}: cannot read {tok!r}; the file is damaged")
    return times, values
