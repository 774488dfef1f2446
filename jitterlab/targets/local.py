"""The machine jitterlab itself runs on."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from jitterlab.targets.base import CommandTimeout, Completed


def _kill_group(pgid: int, signum: int) -> None:
    try:
        os.killpg(pgid, signum)
    except (ProcessLookupError, PermissionError):
        pass


class LocalProcess:
    """A subprocess leading its own process group, so stopping it stops its children too."""

    def __init__(self, argv: list[str], log_path: str | None, on_exit) -> None:
        self.argv = tuple(argv)
        log = open(log_path, "wb") if log_path else subprocess.DEVNULL  # noqa: SIM115
        try:
            self._popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        finally:
            if log_path:
                log.close()  # the child holds its own descriptor
        self.pid = self._popen.pid
        self._on_exit = on_exit

    def poll(self) -> int | None:
        return self._popen.poll()

    def wait(self, timeout_s: float | None = None) -> int:
        try:
            return self._popen.wait(timeout_s)
        except subprocess.TimeoutExpired:
            raise CommandTimeout(f"{self.argv[0]} still running after {timeout_s}s") from None

    def signal(self, signum: int) -> None:
        if self._popen.poll() is None:
            _kill_group(self.pid, signum)

    def stop(self, grace_s: float = 2.0) -> int:
        if self._popen.poll() is None:
            _kill_group(self.pid, signal.SIGTERM)
            try:
                self._popen.wait(grace_s)
            except subprocess.TimeoutExpired:
                _kill_group(self.pid, signal.SIGKILL)
                self._popen.wait()
        # the leader may be gone while children it left in the group still run
        _kill_group(self.pid, signal.SIGKILL)
        self._on_exit(self)
        return self._popen.returncode


class LocalTarget:
    """Runs commands on this machine with subprocess, one process group per command."""

    kind = "local"

    def __init__(self, name: str = "local", workdir: str | None = None) -> None:
        self.name = name
        self.workdir = workdir or f"/tmp/jitterlab-{os.getuid()}"
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        self._live: set[LocalProcess] = set()
        self._lock = threading.Lock()

    def run(self, argv: list[str], timeout_s: float = 60.0) -> Completed:
        try:
            popen = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except FileNotFoundError:
            return Completed(tuple(argv), 127, "", f"{argv[0]}: command not found")
        except PermissionError as exc:
            return Completed(tuple(argv), 126, "", f"{argv[0]}: {exc.strerror}")
        try:
            out, err = popen.communicate(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _kill_group(popen.pid, signal.SIGKILL)
            popen.communicate()
            raise CommandTimeout(f"{' '.join(argv)} ran past its {timeout_s:g}s timeout") from None
        except BaseException:
            _kill_group(popen.pid, signal.SIGKILL)
            popen.wait()
            raise
        return Completed(
            tuple(argv), popen.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        )

    def spawn(self, argv: list[str], log_path: str | None = None) -> LocalProcess:
        proc = LocalProcess(argv, log_path, self._forget)
        with self._lock:
            self._live.add(proc)
        return proc

    def _forget(self, proc: LocalProcess) -> None:
        with self._lock:
            self._live.discard(proc)

    def put(self, local: Path, remote: str) -> None:
        if Path(local).is_dir():
            shutil.copytree(local, remote, dirs_exist_ok=True)
        else:
            Path(remote).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(local, remote)

    def get(self, remote: str, local: Path) -> None:
        Path(local).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(remote, local)

    def close(self) -> None:
        with self._lock:
            live = list(self._live)
        for proc in live:
            proc.stop(grace_s=1.0)

    def live_pids(self) -> list[int]:
        with self._lock:
            return [p.pid for p in self._live if p.poll() is None]

    def wait_for_path(self, path: str, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.path.exists(path):
                return True
            time.sleep(0.002)
        return os.path.exists(path)
