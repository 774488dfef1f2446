"""The Target protocol: the only way code touches a machine under test."""

from __future__ import annotations

import tarfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable


@dataclass(frozen=True)
class Completed:
    """A finished command: exit status and captured output (text, decoded leniently)."""

    argv: tuple[str, ...]
    rc: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.rc == 0


class CommandTimeout(TimeoutError):
    """A command ran past its timeout; it (and its process group) has been killed."""


@runtime_checkable
class Process(Protocol):
    """A process started with Target.spawn, running in its own process group."""

    argv: tuple[str, ...]

    def poll(self) -> int | None:
        """Exit status, or None while it runs."""
        ...

    def wait(self, timeout_s: float | None = None) -> int:
        """Wait for exit; raises CommandTimeout (and leaves it running) after timeout_s."""
        ...

    def stop(self, grace_s: float = 2.0) -> int:
        """SIGTERM the whole group, SIGKILL after grace_s; idempotent; returns the exit status."""
        ...

    def signal(self, signum: int) -> None:
        """Send a signal to the process group (no-op if it has exited)."""
        ...


@runtime_checkable
class Target(Protocol):
    """A machine under test. Commands are argv lists, never shell strings."""

    name: str
    workdir: str  # absolute path on the target where jitterlab keeps its files

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        """Run to completion and capture output; CommandTimeout after timeout_s."""
        ...

    def spawn(self, argv: list[str], log_path: str | None = None) -> Process:
        """Start in the background, stdout+stderr to log_path on the target (or discarded)."""
        ...

    def put(self, local: Path, remote: str) -> None:
        """Copy a local file or directory tree to the target."""
        ...

    def get(self, remote: str, local: Path) -> None:
        """Copy a file from the target."""
        ...

    def close(self) -> None:
        """Stop every process this target spawned that still runs; release connections."""
        ...


def extract_all(tar: tarfile.TarFile, dest: Path) -> None:
    """Unpack what a target sent (or a cache kept) under `dest`, nothing outside it: Python's "data"
    filter where it has it (3.11.4 and later; Debian 12's python3 is 3.11.2), else the same
    refusals made here: no absolute or `..` name, no link leading out, no device. TarError when a
    member is refused. Works on a stream (mode "r|") too: each member is checked as it comes."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    for member in tar:
        names = [member.name] + ([member.linkname] if member.issym() or member.islnk() else [])
        if any(n.startswith("/") or ".." in Path(n).parts for n in names) or member.isdev():
            raise tarfile.TarError(f"refused to unpack {member.name!r}: it would land outside {dest}")
        tar.extract(member, dest)
