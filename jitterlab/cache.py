"""The per-user cache every part of jitterlab keeps its built and downloaded files in."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache() -> Path:
    """$XDG_CACHE_HOME/jitterlab, else ~/.cache/jitterlab (not created here)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitterlab"
