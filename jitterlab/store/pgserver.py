"""A throwaway PostgreSQL server for tests and benchmarks of the PostgreSQL store: its own cluster
in a temporary directory (initdb, as the `postgres` user when run as root), listening only on a
Unix socket, trust authentication, stopped and removed at the end. Debian package: postgresql."""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path


def _bindir() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def available() -> str | None:
    """Why a throwaway server cannot run here, or None when it can."""
    if _bindir() is None:
        return "PostgreSQL is not installed (apt install postgresql; scripts/install-deps installs it)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root needs the postgres user (the postgresql package creates it)"
    return None


@contextlib.contextmanager
def throwaway_server(dbname: str = "jitterlab") -> Iterator[str]:
    """Start a server and yield its URL (postgresql:///DB?host=SOCKETDIR&user=...)."""
    why = available()
    if why:
        raise RuntimeError(why)
    bindir = _bindir()
    assert bindir is not None
    root = Path(tempfile.mkdtemp(prefix="jitterlab-pg-"))
    as_user: list[str] = []
    user = pwd.getpwuid(os.geteuid()).pw_name
    if os.geteuid() == 0:  # initdb refuses root
        user = "postgres"
        shutil.chown(root, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, sock = root / "data", root / "sock"
    try:
        run = lambda argv: subprocess.run([*as_user, *argv], check=True, capture_output=True, text=True)  # noqa: E731
        run([str(bindir / "initdb"), "-D", str(data), "-A", "trust", "-U", user, "--no-sync"])
        run(["mkdir", str(sock)])
        opts = f"-c listen_addresses='' -k {sock} -c fsync=off"
        run([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-l", str(root / "log"), "-w", "start"])
        try:
            run([str(bindir / "createdb"), "-h", str(sock), "-U", user, dbname])
            yield f"postgresql:///{dbname}?host={sock}&user={user}"
        finally:
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop"],
                           capture_output=True)
            time.sleep(0.05)
    finally:
        shutil.rmtree(root, ignore_errors=True)
