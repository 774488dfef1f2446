"""Drives the vpin observer on the target: start, wait until it polls, stop, fetch its capture."""

from __future__ import annotations

import time
from pathlib import Path

from jitterlab.errors import RunFailed
from jitterlab.probes.logs import ObserverCapture, read_observer
from jitterlab.sweep import spawn_recorded
from jitterlab.targets.base import Process, Target


def wait_for_path(target: Target, path: str, timeout_s: float, alive: Process | None = None) -> bool:
    """Poll until `path` exists on the target; False on timeout or when `alive` exits first."""
    fast = getattr(target, "wait_for_path", None)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if fast is not None:
            if fast(path, 0.05):
                return True
        elif target.run(["test", "-e", path]).ok:
            return True
        else:
            time.sleep(0.02)
        if alive is not None and alive.poll() is not None:
            return fast(path, 0) if fast else target.run(["test", "-e", path]).ok
    return False


class Observer:
    """One observer process watching one pin for one run."""

    def __init__(self, target: Target, bindir: str, scratch: str) -> None:
        self.target = target
        self.bindir = bindir
        self.out = f"{scratch}/observer.bin"
        self.stats = f"{scratch}/observer.json"
        self.ready = f"{scratch}/observer.ready"
        self.log = f"{scratch}/observer.log"
        self._proc: Process | None = None

    def start(self, pin: str, *, blind_threshold_ns: int, cpu: int | None, max_duration_ns: int) -> None:
        argv = [
            f"{self.bindir}/c/observer",
            "--pin",
            pin,
            "--out",
            self.out,
            "--stats",
            self.stats,
            "--ready",
            self.ready,
            "--blind-threshold-ns",
            str(blind_threshold_ns),
            "--max-duration-ns",
            str(max_duration_ns),
        ]
        if cpu is not None:
            argv += ["--cpu", str(cpu)]
        self._proc = spawn_recorded(self.target, argv, log_path=self.log)
        if not wait_for_path(self.target, self.ready, timeout_s=10.0, alive=self._proc):
            self._proc.stop()
            raise RunFailed(f"vpin observer did not start polling within 10s: {self._tail()}")

    def stop(self, local_dir: Path) -> ObserverCapture:
        assert self._proc is not None, "stop() before start()"
        self._proc.stop(grace_s=10.0)
        local_out, local_stats = local_dir / "observer.bin", local_dir / "observer.json"
        try:
            self.target.get(self.out, local_out)
            self.target.get(self.stats, local_stats)
        except OSError as exc:
            raise RunFailed(f"vpin observer left no capture ({exc}); its log: {self._tail()}") from None
        return read_observer(local_out, local_stats)

    def close(self) -> None:
        if self._proc is not None:
            self._proc.stop(grace_s=1.0)

    def _tail(self) -> str:
        done = self.target.run(["tail", "-n", "3", self.log])
        return done.stdout.strip().replace("\n", " | ") or "(no output)"
