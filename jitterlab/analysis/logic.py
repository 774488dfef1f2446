"""Logic-analyzer captures turned into edges.

A capture is a series of samples taken every 1/samplerate; one logic channel is one bit of each
sample. sigrok writes it either raw ("binary" output: samples of `unitsize` bytes, little-endian,
back to back) or as an srzip archive (a zip holding `metadata`, an INI text naming the channels
`probeN` (bit N-1), `unitsize` and `samplerate`, and chunks `logic-1-1`, `logic-1-2`, ... of raw
samples). Edges are the sample indices k where the channel's bit differs from sample k-1; the
edge time is k / samplerate, so its resolution is one sample period.

Decoding reads the file in blocks of CHUNK_SAMPLES and keeps only the edges: memory is bounded by
the block and the edge count, never by the length of the capture.

Aligning the edges with the program's own is analysis/alignment.py.
"""

from __future__ import annotations

import configparser
import io
import math
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from jitterlab.model.errors import RunFailed

CHUNK_SAMPLES = 1 << 22  # 4 Mi samples per block (4 MiB at one byte per sample)


@dataclass(frozen=True)
class LogicEdges:
    """Edges of one channel: `index` is the sample where the new level is first seen."""

    index: np.ndarray  # int64 sample indices, ascending
    level: np.ndarray  # uint8, the level from that sample on
    initial_level: int  # level of sample 0
    n_samples: int


def _bit_of(unitsize: int, bit: int) -> tuple[int, int]:
    if unitsize < 1 or not 0 <= bit < 8 * unitsize:
        raise ValueError(f"bit {bit} is outside a {unitsize}-byte sample")
    return bit // 8, 1 << (bit % 8)


class _EdgeFinder:
    """Feeds blocks of samples; keeps the edges of one bit across block borders."""

    def __init__(self, unitsize: int, bit: int) -> None:
        self.byte, self.mask = _bit_of(unitsize, bit)
        self.unitsize = unitsize
        self.parts: list[np.ndarray] = []
        self.n_samples = 0
        self.first: int | None = None
        self.last = 0

    def feed(self, raw: np.ndarray) -> None:
        """`raw`: uint8 bytes of whole samples."""
        samples = raw[self.byte :: self.unitsize] if self.unitsize > 1 else raw
        if not len(samples):
            return
        bits = np.bitwise_and(samples, self.mask)
        if self.first is None:
            self.first = int(bits[0] != 0)
        elif (bits[0] != 0) != self.last:
            self.parts.append(np.array([self.n_samples], dtype=np.int64))
        changes = np.flatnonzero(bits[1:] != bits[:-1])
        if len(changes):
            changes += self.n_samples + 1
            self.parts.append(changes.astype(np.int64, copy=False))
        self.last = int(bits[-1] != 0)
        self.n_samples += len(samples)

    def edges(self) -> LogicEdges:
        index = np.concatenate(self.parts) if self.parts else np.empty(0, dtype=np.int64)
        self.parts = []
        first = self.first or 0
        level = np.empty(len(index), dtype=np.uint8)  # levels alternate from the initial one
        level[0::2], level[1::2] = 1 - first, first
        return LogicEdges(index, level, first, self.n_samples)


def decode_binary(path: Path, *, unitsize: int, bit: int, expected_samples: int | None = None) -> LogicEdges:
    """Edges of bit `bit` in a raw sigrok capture; RunFailed if it is cut short or not whole."""
    where = f"capture {path}"
    try:
        size = Path(path).stat().st_size
    except OSError as exc:
        raise RunFailed(f"{where}: missing ({exc.strerror})") from None
    if size == 0:
        raise RunFailed(f"{where}: empty (the analyzer sent no sample)")
    if size % unitsize:
        raise RunFailed(f"{where}: truncated ({size} bytes is not a whole number of {unitsize}-byte samples)")
    n = size // unitsize
    if expected_samples is not None and n != expected_samples:
        what = "ended early" if n < expected_samples else "is longer than asked"
        raise RunFailed(f"{where}: {what}: {n} of {expected_samples} samples")
    finder = _EdgeFinder(unitsize, bit)
    with open(path, "rb") as f:
        while True:
            raw = np.fromfile(f, dtype=np.uint8, count=CHUNK_SAMPLES * unitsize)
            if not len(raw):
                break
            finder.feed(raw)
    return finder.edges()


@dataclass(frozen=True)
class SrzipInfo:
    samplerate_hz: int
    unitsize: int
    channels: dict[str, int]  # name -> bit
    chunks: list[str]


_FREQ = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kKmMgG]?)(?:Hz|hz|HZ)?\s*$")
_FREQ_FACTOR = {"": 1, "k": 1_000, "m": 1_000_000, "g": 1_000_000_000}


def frequency_hz(text: object) -> int | None:
    """A rate as sigrok writes it ("24 MHz", "200 kHz", "24MHz", "1000000") in Hz; None if unreadable."""
    match = _FREQ.match(str(text)) if isinstance(text, str | int) and not isinstance(text, bool) else None
    if match is None:
        return None
    hz = float(match.group(1)) * _FREQ_FACTOR[match.group(2).lower()]
    if not math.isfinite(hz) or hz > 1e13:  # no analyzer samples at 10 THz: a typo, not a rate
        return None
    return round(hz) if hz >= 1 and abs(hz - round(hz)) < 1e-6 else None


def _samplerate(text: str, where: str) -> int:
    hz = frequency_hz(text)
    if hz is None:
        raise ValueError(f"samplerate {text!r}")
    return hz


def srzip_info(path: Path) -> SrzipInfo:
    """The metadata of an srzip capture (sigrok session file, PulseView's .sr)."""
    where = f"capture {path}"
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            meta_text = archive.read("metadata").decode("utf-8", "replace")
    except FileNotFoundError:
        raise RunFailed(f"{where}: missing") from None
    except KeyError:
        raise RunFailed(f"{where}: garbled (no metadata in the archive)") from None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise RunFailed(f"{where}: garbled or truncated (not a whole zip archive: {exc})") from None
    meta = configparser.ConfigParser(interpolation=None)
    try:
        meta.read_string(meta_text)
        device = meta["device 1"]
        unitsize = int(device["unitsize"])
        rate = _samplerate(device["samplerate"], where)
        prefix = device.get("capturefile", "logic-1")
    except (configparser.Error, KeyError, ValueError) as exc:
        raise RunFailed(f"{where}: garbled metadata ({exc.__class__.__name__}: {exc})") from None
    channels = {value: int(key[5:]) - 1 for key, value in device.items()
                if key.startswith("probe") and key[5:].isdigit()}
    chunks = sorted((n for n in names if n == prefix or n.startswith(prefix + "-")),
                    key=lambda n: int(n.rsplit("-", 1)[1]) if n != prefix else 0)
    if not chunks:
        raise RunFailed(f"{where}: garbled (no {prefix} sample chunks)")
    return SrzipInfo(rate, unitsize, channels, chunks)


def decode_srzip(path: Path, channel: str) -> tuple[LogicEdges, SrzipInfo]:
    """Edges of `channel` in an srzip capture, with its metadata."""
    where = f"capture {path}"
    info = srzip_info(path)
    if channel not in info.channels:
        raise RunFailed(f"{where}: no channel {channel!r}; it holds {', '.join(info.channels)}")
    finder = _EdgeFinder(info.unitsize, info.channels[channel])
    step = CHUNK_SAMPLES * info.unitsize
    try:
        with zipfile.ZipFile(path) as archive:
            for name in info.chunks:
                if archive.getinfo(name).file_size % info.unitsize:
                    raise RunFailed(f"{where}: {name} is not a whole number of {info.unitsize}-byte samples")
                with archive.open(name) as member:
                    stream = io.BufferedReader(member, buffer_size=step)
                    while block := stream.read(step):
                        finder.feed(np.frombuffer(block, dtype=np.uint8))
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise RunFailed(f"{where}: garbled or truncated ({exc})") from None
    if finder.n_samples == 0:
        raise RunFailed(f"{where}: empty (no samples)")
    return finder.edges(), info


def edges_ns(edges: LogicEdges, samplerate_hz: int) -> np.ndarray:
    """Edge times in ns from the first sample, exact to the ns (integer arithmetic)."""
    return edges.index * 1_000_000_000 // samplerate_hz
