"""Put the programs on a target and build them there, once per content version."""

from __future__ import annotations

import hashlib
from pathlib import Path

from jitterlab.errors import UserError
from jitterlab.targets.base import Target

PROGRAMS_DIR = Path(__file__).parent / "programs"
_SOURCE_SUFFIXES = {".c", ".h", ".sh", ".py", ".js"}


def _sources() -> list[Path]:
    return sorted(
        p
        for p in PROGRAMS_DIR.rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.name != "__init__.py"
        and (p.suffix in _SOURCE_SUFFIXES or p.name == "Makefile")
    )


def programs_hash() -> str:
    """Content hash of the program sources: an unchanged tree is neither re-sent nor rebuilt."""
    digest = hashlib.sha256()
    for path in _sources():
        digest.update(str(path.relative_to(PROGRAMS_DIR)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()[:12]


def deploy(target: Target, timeout_s: float = 300.0) -> str:
    """Copy and build the programs on `target`; return the remote programs directory."""
    bindir = f"{target.workdir}/programs-{programs_hash()}"
    marker = f"{bindir}/.built"
    if target.run(["test", "-e", marker]).ok:
        return bindir
    target.run(["mkdir", "-p", bindir])
    for path in _sources():
        target.put(path, f"{bindir}/{path.relative_to(PROGRAMS_DIR)}")
    built = target.run(["make", "-s", "-C", f"{bindir}/c"], timeout_s=timeout_s)
    if not built.ok:
        lines = (built.stderr or built.stdout).strip().splitlines()
        raise UserError(
            f"target {target.name!r}: building the C programs failed: "
            f"{lines[-1] if lines else 'make exited ' + str(built.rc)}; "
            "check that gcc and make work there (apt install gcc make)"
        )
    target.run(["touch", marker])
    return bindir
