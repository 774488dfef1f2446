"""The per-user cache every part of jitterlab keeps its built and downloaded files in."""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator
from pathlib import Path


def user_cache() -> Path:
    """$XDG_CACHE_HOME/jitterlab, else ~/.cache/jitterlab (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitterlab"


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Held while one process or thread prepares an entry of the cache (an apt state, a kernel, a
    root, a build): the others wait for it (flock: every open() is a lock of its own, also within a
    process)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
