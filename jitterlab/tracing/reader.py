"""A trace file's events as arrays (model/trace.py), read through libtracecmd and libtraceevent by a
small C helper (trace_events.c), built on this machine once per source version.

The helper writes fixed rows that numpy takes as they are: memory is the rows (72 bytes an event)
and the names, linear in the events, never in the trace's text. bench/trace_read.py measures it
against `trace-cmd report` (report_text.py, for small windows).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np

from jitterlab.cache import user_cache
from jitterlab.model.errors import UserError
from jitterlab.model.trace import EVENT_DTYPE, Kind, TraceEvents
from jitterlab.tracing.recorder import START_MARK, STOP_MARK

SOURCE = Path(__file__).with_name("trace_events.c")
_CFLAGS = ["-std=c11", "-O2", "-Wall", "-Wextra", "-Werror"]
_LIBRARIES = "libtracecmd"
_PACKAGES = "libtracecmd-dev libtraceevent-dev libtracefs-dev pkg-config"
_MAGIC = b"JLTRACE1"
_HEADER = 16


def cache_dir() -> Path:
    """Where the helper is kept: the user's cache (jitterlab/cache.py)."""
    return user_cache()


def helper(cache: Path | None = None) -> Path:
    """The reader program, compiled here into `cache` once per source version and flags; UserError
    naming the packages when it cannot be built."""
    cache = cache or cache_dir()
    flags = _pkg_config()
    source = SOURCE.read_bytes()
    digest = hashlib.sha256(source + " ".join([*_CFLAGS, *flags]).encode()).hexdigest()[:12]
    binary = cache / f"trace-events-{digest}"
    if binary.exists():
        return binary
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        raise UserError(f"reading trace files needs a C compiler on this machine (apt install gcc "
                        f"{_PACKAGES})")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        built = subprocess.run([cc, *_CFLAGS, "-o", f"{tmp}/trace-events", str(SOURCE), *flags],
                               capture_output=True, text=True, stdin=subprocess.DEVNULL, check=False)
        if built.returncode != 0:
            last = (built.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UserError(f"building the trace reader ({SOURCE.name}) failed: {last}; it needs {_PACKAGES} "
                            f"(apt install {_PACKAGES})")
        os.replace(f"{tmp}/trace-events", binary)
    return binary


def _pkg_config() -> list[str]:
    tool = shutil.which("pkg-config")
    done = subprocess.run([tool, "--cflags", "--libs", _LIBRARIES], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, check=False) if tool else None
    if done is None or done.returncode != 0:
        raise UserError(f"reading trace files needs {_LIBRARIES} and pkg-config on this machine "
                        f"(apt install {_PACKAGES})")
    return done.stdout.split()


def read(dat: Path, *, cache: Path | None = None) -> TraceEvents:
    """Every event of the trace file `dat` that jitterlab reads (model/trace.py: Kind), covering the
    span between the recorder's marks where it made them; UserError naming the file when it is not
    a trace file the reader can read."""
    program = helper(cache)
    if not dat.is_file():
        raise UserError(f"{dat}: no such trace file")
    with tempfile.TemporaryDirectory() as tmp:
        rows_path, names_path = Path(tmp) / "rows", Path(tmp) / "names"
        done = subprocess.run([str(program), str(dat), str(rows_path), str(names_path)], capture_output=True,
                              text=True, stdin=subprocess.DEVNULL, check=False)
        if done.returncode != 0:
            why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
            raise UserError(f"{dat}: cannot read this trace file ({why}); record it again, or open it with "
                            "trace-cmd report to see what is wrong")
        with open(rows_path, "rb") as f:
            header = f.read(_HEADER)
            if header[:8] != _MAGIC or int.from_bytes(header[8:12], "little") != EVENT_DTYPE.itemsize:
                raise UserError(f"{dat}: the trace reader wrote rows of another layout; remove {program} "
                                "so that it is built again")
            rows = np.fromfile(f, dtype=EVENT_DTYPE)
        names = tuple(names_path.read_bytes().split(b"\0")[:-1])
    return marked(TraceEvents(rows, tuple(n.decode(errors="replace") for n in names)))


def marked(events: TraceEvents) -> TraceEvents:
    """The events, covering the span between the recorder's start and stop marks where both are in
    them (else what their own first and last events on each CPU show)."""
    rows = events.rows
    marks = rows[rows["kind"] == Kind.MARK]
    texts = [events.names[i] for i in marks["name"]]
    if START_MARK in texts and STOP_MARK in texts:
        return events.covering(int(marks["time_ns"][texts.index(START_MARK)]),
                               int(marks["time_ns"][len(texts) - 1 - texts[::-1].index(STOP_MARK)]))
    return events
