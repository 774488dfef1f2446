"""A file a run left on its target, read as text."""

from __future__ import annotations

import tempfile
from pathlib import Path

from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import SharesControllerFiles, has


def fetched_text(target: Target, path: str) -> str:
    """The text of `path` on the target, "" when there is none. Read in place where the target's files
    are this machine's, else fetched with get() (one round trip, where a `cat` would start a process)."""
    here = has(target, SharesControllerFiles)
    if here is not None:
        return here.read_here([path])
    with tempfile.TemporaryDirectory(prefix="jitterlab-fetched-") as tmp:
        local = Path(tmp) / "file"
        try:
            target.get(path, local)
        except OSError:
            return ""
        return local.read_bytes().decode(errors="replace")
