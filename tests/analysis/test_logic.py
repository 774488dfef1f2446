"""Decoding logic-analyzer captures into edges (binary and srzip, real sigrok files and synthetic
ones with known edges), one-line errors for cut or garbled captures; alignment: tests/probes."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis import logic
from jitterlab.analysis.logic import decode_binary, decode_srzip, edges_ns, frequency_hz
from jitterlab.model.errors import RunFailed

DATA = Path(__file__).parent.parent / "data" / "sigrok"


def demo_edges(bit: int, n_samples: int) -> list[int]:
    """The demo device counts up once per sample: bit n changes every 2^n samples."""
    return list(range(2**bit, n_samples, 2**bit))


@pytest.mark.parametrize("bit", [0, 3, 5, 7])
def test_a_real_binary_capture_of_the_demo_counter(bit):
    edges = decode_binary(DATA / "demo-incremental-1000.bin", unitsize=1, bit=bit, expected_samples=1000)
    assert edges.index.tolist() == demo_edges(bit, 1000)
    assert edges.initial_level == 0 and edges.n_samples == 1000
    assert edges.level.tolist() == [(k + 1) % 2 for k in range(len(edges.index))]


@pytest.mark.parametrize("channel,bit", [("D0", 0), ("D4", 4), ("D7", 7)])
def test_a_real_srzip_capture_of_the_demo_counter(channel, bit):
    edges, info = decode_srzip(DATA / "demo-incremental-1000.sr", channel)
    assert (info.samplerate_hz, info.unitsize) == (200_000, 1)
    assert edges.index.tolist() == demo_edges(bit, 1000)
    # at 200 kHz a sample is 5 us: D7's edges are 640 us apart
    assert np.diff(edges_ns(edges, info.samplerate_hz)).tolist() == [5_000 * 2**bit] * (len(edges.index) - 1)


def _samples(unitsize: int, bit: int, n: int, changes: list[int], initial: int) -> np.ndarray:
    """n samples whose bit `bit` starts at `initial` and flips at `changes`; other bits noise."""
    rng = np.random.default_rng(7)
    raw = rng.integers(0, 256, size=(n, unitsize), dtype=np.uint8)
    level = np.full(n, initial, dtype=np.uint8)
    for k in changes:
        level[k:] ^= 1
    byte, mask = bit // 8, 1 << (bit % 8)
    raw[:, byte] = (raw[:, byte] & ~np.uint8(mask)) | (level * mask).astype(np.uint8)
    return raw.reshape(-1)


@pytest.mark.parametrize("unitsize,bit", [(1, 2), (2, 11), (4, 30)])
def test_known_edges_across_block_borders(tmp_path, monkeypatch, unitsize, bit):
    monkeypatch.setattr(logic, "CHUNK_SAMPLES", 16)  # edges right at and around block borders
    changes = [1, 15, 16, 17, 31, 32, 48, 49, 50, 99]
    path = tmp_path / "c.bin"
    _samples(unitsize, bit, 100, changes, initial=1).tofile(path)
    edges = decode_binary(path, unitsize=unitsize, bit=bit)
    assert edges.index.tolist() == changes
    assert edges.level.tolist() == [0, 1, 0, 1, 0, 1, 0, 1, 0, 1]
    assert edges.initial_level == 1 and edges.n_samples == 100


def test_a_quiet_line_has_no_edges(tmp_path):
    path = tmp_path / "c.bin"
    np.zeros(1000, dtype=np.uint8).tofile(path)
    edges = decode_binary(path, unitsize=1, bit=0)
    assert len(edges.index) == 0 and edges.initial_level == 0


@pytest.mark.parametrize("content,expected,message", [
    (b"", None, r"empty \(the analyzer sent no sample\)$"),
    (b"\x00" * 999, None, r"truncated \(999 bytes is not a whole number of 2-byte samples\)$"),
    (b"\x00" * 1000, 600, r"ended early: 500 of 600 samples$"),
])
def test_cut_captures_are_one_line_errors(tmp_path, content, expected, message):
    path = tmp_path / "c.bin"
    path.write_bytes(content)
    with pytest.raises(RunFailed, match=f"^capture {path}: {message}"):
        decode_binary(path, unitsize=2, bit=0, expected_samples=expected)


def test_a_missing_capture(tmp_path):
    with pytest.raises(RunFailed, match="missing"):
        decode_binary(tmp_path / "none.bin", unitsize=1, bit=0)


def _srzip(path: Path, metadata: str, chunks: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("version", "2")
        archive.writestr("metadata", metadata)
        for name, data in chunks.items():
            archive.writestr(name, data)
    return path


META = """[global]
sigrok version=0.5.2

[device 1]
capturefile=logic-1
total probes=16
samplerate=24 MHz
total analog=0
probe1=D0
probe10=CLK
unitsize=2
"""


def test_srzip_in_several_chunks_with_a_two_byte_sample(tmp_path, monkeypatch):
    monkeypatch.setattr(logic, "CHUNK_SAMPLES", 8)
    raw = _samples(2, 9, 64, [3, 20, 21, 40], initial=0).tobytes()  # probe10 = bit 9
    chunks = {"logic-1-1": raw[:40], "logic-1-2": raw[40:90], "logic-1-10": raw[90:]}
    # chunk order is numeric (1, 2, 10), not by name
    edges, info = decode_srzip(_srzip(tmp_path / "c.sr", META, chunks), "CLK")
    assert info.samplerate_hz == 24_000_000 and info.channels == {"D0": 0, "CLK": 9}
    assert edges.index.tolist() == [3, 20, 21, 40]
    assert edges_ns(edges, info.samplerate_hz).tolist() == [125, 833, 875, 1666]  # floor(k / 24 MHz)


@pytest.mark.parametrize("make,message", [
    (lambda p: p.write_bytes(b"PK\x03\x04 not really"), "garbled or truncated"),
    (lambda p: _srzip(p, "[device 1]\nunitsize=1\n", {"logic-1-1": b"\x00"}), "garbled metadata"),
    (lambda p: _srzip(p, META, {}), r"garbled \(no logic-1 sample chunks\)"),
    (lambda p: _srzip(p, META, {"logic-1-1": b"\x00" * 3}), "logic-1-1 is not a whole number of 2-byte"),
    (lambda p: _srzip(p, META.replace("probe10=CLK", "probe10=X"), {"logic-1-1": b"\x00\x00"}),
     r"no channel 'CLK'; it holds D0, X"),
])
def test_garbled_srzip_is_a_one_line_error(tmp_path, make, message):
    path = tmp_path / "c.sr"
    make(path)
    with pytest.raises(RunFailed, match=message) as caught:
        decode_srzip(path, "CLK")
    assert "\n" not in caught.value.reason


def test_a_real_srzip_cut_short(tmp_path):
    cut = tmp_path / "cut.sr"
    data = (DATA / "demo-incremental-1000.sr").read_bytes()
    cut.write_bytes(data[: len(data) // 2])
    with pytest.raises(RunFailed, match=r"garbled or truncated \(not a whole zip archive"):
        decode_srzip(cut, "D0")


def test_a_copied_capture_decodes_the_same(tmp_path):
    copy = tmp_path / "x.sr"
    shutil.copy(DATA / "demo-incremental-1000.sr", copy)
    assert decode_srzip(copy, "D2")[0].index.tolist() == demo_edges(2, 1000)


@pytest.mark.parametrize("text,hz", [("24MHz", 24_000_000), ("200 kHz", 200_000), ("1000000", 1_000_000),
                                     (500, 500), ("1.5MHz", 1_500_000), ("2.5", None), ("fast", None),
                                     ("0Hz", None), (True, None)])
def test_rates_as_sigrok_writes_them(text, hz):
    assert frequency_hz(text) == hz
