"""Raw edge series of one run in one Parquet file: written atomically, checked by sha256.

Columns: `series` (dictionary-encoded name, e.g. "vpin", "self", "vpin.blind"), `t_ns` int64,
`level` uint8; rows of one series are contiguous. A series of samples (round-trip times,
latencies) keeps its int64 values in `t_ns` with level 0, and its unit in the metadata.
`t_ns` is DELTA_BINARY_PACKED + zstd:
a 1 ms wave with a few µs of jitter takes about 2 bytes per edge, close to the entropy of the
jitter itself (bench/storage.py). Blind intervals are stored as a 0/1 signal
(`blind_series` / `blind_spans`). The file's schema metadata lists every series and its
length, so empty series survive and a file cut short is noticed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from jitterlab.model.errors import UserError
from jitterlab.model.series import EdgeSeries, Samples, Series

FORMAT = "jitterlab.raw/2"
_READABLE = ("jitterlab.raw/1", FORMAT)  # /1 had edge series only
_META_KEY = b"jitterlab.raw"
_WRITE_OPTIONS = dict(
    compression="zstd",
    compression_level=3,  # levels up to 19 gain < 1 % on jittery times and write 4x slower
    use_dictionary=["series", "level"],
    column_encoding={"t_ns": "DELTA_BINARY_PACKED"},
    row_group_size=1 << 22,
    write_statistics=False,  # min/max of t_ns buys nothing: files are read whole
)


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
    return digest.hexdigest()


def write_raw(path: Path, series: Mapping[str, Series]) -> str:
    """Write all series to `path` atomically (temp, fsync, rename, fsync dir); returns sha256."""
    path = Path(path)
    names = list(series)
    lengths = [len(series[name]) for name in names]
    indices = np.repeat(np.arange(len(names), dtype=np.int32), lengths)
    entries: list[list] = []
    t_parts, level_parts = [], []
    for name, n in zip(names, lengths, strict=True):
        one = series[name]
        if isinstance(one, Samples):
            entries.append([name, n, "samples", one.unit])
            t_parts.append(one.values)
            level_parts.append(np.zeros(n, dtype=np.uint8))
        else:
            entries.append([name, n])
            t_parts.append(one.t_ns)
            level_parts.append(one.level)
    meta = {"format": FORMAT, "series": entries}
    table = pa.table(
        {
            "series": pa.DictionaryArray.from_arrays(indices, pa.array(names, type=pa.string())),
            "t_ns": _concat(t_parts, np.int64),
            "level": _concat(level_parts, np.uint8),
        }
    ).replace_schema_metadata({_META_KEY: json.dumps(meta).encode()})

    return write_atomic(path, lambda f: pq.write_table(table, f, **_WRITE_OPTIONS))


def write_atomic(path: Path, content: bytes | Callable[[BinaryIO], object]) -> str:
    """Write bytes (or what `content(file)` writes) to `path` durably: temp file, fsync, rename,
    fsync of the directory. Returns the sha256 of what was written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        with open(tmp, "wb") as f:
            if isinstance(content, bytes):
                f.write(content)
            else:
                content(f)
            f.flush()
            os.fsync(f.fileno())
        digest = sha256_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
        raise
    _fsync_dir(path.parent)
    return digest


def read_raw(path: Path, expected_sha256: str | None = None) -> dict[str, Series]:
    """All series of a raw file; UserError if it is missing, damaged or not the expected bytes."""
    path = Path(path)
    remedy = (
        "measure that run again with `jitterlab run CAMPAIGN --resume --retry-damaged` (an imported "
        "capture: import it again), or restore the file from a backup"
    )
    try:
        if expected_sha256 is not None:
            actual = sha256_file(path)
            if actual != expected_sha256.lower():
                raise UserError(
                    f"{path}: raw file is damaged (sha256 {actual}, the store recorded "
                    f"{expected_sha256}); {remedy}"
                )
        table = pq.read_table(path)
        meta = json.loads(table.schema.metadata[_META_KEY])
        return _split(table, meta)
    except UserError:
        raise
    except FileNotFoundError as e:
        raise UserError(f"{path}: raw file is missing; {remedy}") from e
    except (OSError, pa.ArrowException, KeyError, TypeError, ValueError) as e:
        raise UserError(f"{path}: cannot read raw file ({e}); {remedy}") from e


def _split(table: pa.Table, meta: dict) -> dict[str, Series]:
    if meta.get("format") not in _READABLE:
        raise ValueError(f"unknown raw format {meta.get('format')!r}, expected {FORMAT!r}")
    t_ns = table.column("t_ns").to_numpy()
    level = table.column("level").to_numpy()
    if t_ns.dtype != np.int64 or level.dtype != np.uint8:
        raise ValueError(f"column types are t_ns:{t_ns.dtype}, level:{level.dtype}")
    names = table.column("series")
    # rows are contiguous per series in the order of the metadata: check it, then slice
    out: dict[str, Series] = {}
    start = 0
    for name, n, *kind in meta["series"]:
        for chunk in names.slice(start, n).chunks:
            if len(chunk) == 0:
                continue
            # numpy, not pyarrow.compute: that module's import was 58 ms of every `jitterlab run`'s start
            indices = chunk.indices.to_numpy(zero_copy_only=False)
            lo, hi = (int(indices.min()), int(indices.max())) if chunk.null_count == 0 else (0, -1)
            if lo != hi or chunk.dictionary[lo].as_py() != name:
                raise ValueError(f"rows {start}..{start + n} are not all of series {name!r}")
        if kind and kind[0] == "samples":
            out[name] = Samples(t_ns[start : start + n], str(kind[1]))
        else:
            out[name] = EdgeSeries(t_ns[start : start + n], level[start : start + n])
        start += n
    if start != len(table):
        raise ValueError(f"the file holds {len(table)} rows, its metadata lists {start}")
    return out


def _concat(arrays: list[np.ndarray], dtype: type) -> np.ndarray:
    return np.concatenate(arrays).astype(dtype, copy=False) if arrays else np.empty(0, dtype)


def _fsync_dir(directory: Path) -> None:
    """Make the rename itself durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
