"""A file a run left on its target, read as text."""

from __future__ import annotations

import tempfile
from pathlib import Path

from jitterlab.targets.base import Target


def fetched_text(target: Target, path: str) -> str:
    """The text of `path` on the target, "" when there is none. Fetched with get(): a copy on this
    machine, one round trip to another one, where a `cat` would start a process on either."""
    with tempfile.TemporaryDirectory(prefix="jitterlab-fetched-") as tmp:
        local = Path(tmp) / "file"
        try:
            target.get(path, local)
        except OSError:
            return ""
        return local.read_bytes().decode(errors="replace")
