"""One jitterlab at a time measures a campaign: a lock file per campaign in the results directory.

The lock is an flock(2) on `locks/campaign-<id>.lock`, so the kernel releases it when its holder
ends, however it ends (kill -9 included): a stale lock cannot exist. The file holds who has it
(pid, host, since when), for the message that refuses the second one. It is never removed: removing
it could hand a second process a lock on a new file while the first holds the old one.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path

from jitterlab.model.errors import RuntimeProblem


class CampaignBusy(RuntimeProblem):
    """Another process measures this campaign now."""


class CampaignLock:
    def __init__(self, root: Path, campaign_id: int, name: str) -> None:
        self.path = Path(root) / "locks" / f"campaign-{campaign_id}.lock"
        self.campaign_id = campaign_id
        self.name = name
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock, or raise CampaignBusy naming its holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise CampaignBusy(
                f"campaign {self.name!r} (#{self.campaign_id}) in {self.path.parent.parent} is being "
                f"measured by {holder}; wait for it to end (or stop it), then run with --resume"
            ) from None
        except BaseException:
            os.close(fd)
            raise
        me = {"pid": os.getpid(), "host": socket.gethostname(), "since_ns": time.time_ns()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode() + b"\n", 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing releases the flock
            self._fd = None


def _holder(fd: int) -> str:
    try:
        written = json.loads(os.pread(fd, 4096, 0) or b"{}")  # the holder's pid, host and since_ns
        since = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(int(written["since_ns"]) / 1e9))
        return f"pid {int(written['pid'])} on {written['host']} since {since}"
    except (OSError, ValueError, KeyError, TypeError):
        return "another jitterlab (it has not written its name yet)"
