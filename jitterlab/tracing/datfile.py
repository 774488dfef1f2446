"""The trace file: a trace-cmd .dat that `trace-cmd report` reads and KernelShark opens, built on this
machine from a recording's raw pages without `trace-cmd record` (which fails in containers: it
writes /proc/sys/kernel/ftrace_enabled).

`trace-cmd restore -c -t DIR` writes the headers from the target's format files (copied by the
recorder, so a remote target's own formats are used), then `trace-cmd restore -i HEAD -o FILE
cpu0 cpu1 ...` appends each CPU's pages. Function addresses (hrtimer callbacks) stay numbers:
the target's symbol table is not copied. The pages must be of this machine's page size, which
trace-cmd writes into the file.

trace-cmd (libtracefs) mounts this machine's tracefs when it finds it unmounted, and leaves it so;
as root it runs in a mount namespace of its own (unshare), so that nothing here is changed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from jitterlab.model.errors import RunFailed
from jitterlab.tracing.recorder import RawTrace

_PAGE_DATA = re.compile(r"field:\s*char data;\s*offset:(\d+);\s*size:(\d+);")


def trace_cmd() -> str:
    """trace-cmd on this machine; RunFailed naming the package when it is missing."""
    found = shutil.which("trace-cmd")
    if found is None:
        raise RunFailed("building the trace file needs trace-cmd on this machine (apt install trace-cmd)",
                        status="unavailable")
    return found


def run_trace_cmd(argv: list[str]) -> subprocess.CompletedProcess:
    """trace-cmd's `argv` run here, as root in a mount namespace of its own where one can be made."""
    unshare = shutil.which("unshare")
    if os.geteuid() == 0 and unshare:  # others cannot mount: nothing to keep from them
        done = subprocess.run([unshare, "--mount", "--propagation", "private", *argv], capture_output=True,
                              text=True, errors="replace", stdin=subprocess.DEVNULL, check=False)
        if not done.stderr.startswith("unshare:"):  # a container may refuse namespaces: run it as it is
            return done
    return subprocess.run(argv, capture_output=True, text=True, errors="replace", stdin=subprocess.DEVNULL,
                          check=False)


def page_size(tracefs: Path) -> int | None:
    """The ring buffer's page size on the target, from its events/header_page (None: not said)."""
    try:
        match = _PAGE_DATA.search((tracefs / "events" / "header_page").read_text())
    except OSError:
        return None
    return int(match[1]) + int(match[2]) if match else None


def build(raw: RawTrace, out: Path) -> Path:
    """Write the recording `raw` as the trace-cmd file `out`; RunFailed with trace-cmd's words."""
    tool = trace_cmd()
    tracefs = raw.directory / "tracefs"
    pages = page_size(tracefs)
    here = os.sysconf("SC_PAGESIZE")
    if pages is not None and pages != here:
        raise RunFailed(f"the target's trace pages are {pages} bytes and this machine's {here}: trace-cmd "
                        "here cannot write its trace file")
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        head, symbols = Path(tmp) / "head.dat", Path(tmp) / "kallsyms"
        symbols.write_text("")
        _run([tool, "restore", "-c", "-t", str(tracefs), "-k", str(symbols), "-o", str(head)], "headers")
        part = Path(tmp) / out.name
        _run([tool, "restore", "-i", str(head), "-o", str(part), *map(str, raw.raw_files())], "pages")
        os.replace(part, out)
    return out


def _run(argv: list[str], what: str) -> None:
    done = run_trace_cmd(argv)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}"])[-1]
        raise RunFailed(f"trace-cmd restore could not write the trace file's {what}: {last}")
