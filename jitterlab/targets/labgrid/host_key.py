"""labgrid's SSHDriver does not check host keys (it starts its master connection with
StrictHostKeyChecking=no and UserKnownHostsFile=/dev/null): with known_hosts in a labgrid
[[target]] jitterlab makes it check them like an ssh target's; without, it says so (the words of
that warning are here; capabilities.host_key_warning asks any target for its own)."""

from __future__ import annotations

import shlex
from typing import Any

from jitterlab.model.errors import UserError

# what an unverified key risks on a labgrid board, and how to have it verified (LabgridTarget)
UNVERIFIED = (
    "the board's SSH host key is not verified: labgrid's SSHDriver connects with "
    "StrictHostKeyChecking=no, so a machine posing as the board would get jitterlab's commands "
    "and programs, and could send back made-up measurements",
    'set known_hosts = "~/.ssh/known_hosts" in its [[target]] after adding the board\'s key '
    "(ssh-keyscan, checked against its console): jitterlab then refuses an unknown or changed key",
)


def verify_host_key(driver: Any, known_hosts: str) -> None:
    """Make the driver's master connection check the host key against `known_hosts`. SSHDriver
    starts it with StrictHostKeyChecking=no and UserKnownHostsFile=/dev/null after the options of
    its ssh_prefix, and ssh keeps the first value it reads of an option: ours go first."""
    start = driver._start_own_master

    def strict_master() -> Any:
        driver.ssh_prefix = ["-o", "StrictHostKeyChecking=yes", "-o",
                             f"UserKnownHostsFile={known_hosts.replace('%', '%%')}", *driver.ssh_prefix]
        return start()

    driver._start_own_master = strict_master


def host_key_refused(name: str, service: Any, known_hosts: str, said: list[str]) -> UserError | None:
    """The error for what ssh said when the master connection failed, if it refused the host key."""
    text = " ".join(said)
    if "Host key verification failed" not in text and "IDENTIFICATION HAS CHANGED" not in text:
        return None
    scan = f"ssh-keyscan -p {service.port} {shlex.quote(service.address)}"
    return UserError(
        f"target {name!r} (labgrid): the host key of {service.address}:{service.port} is not the one "
        f"in {known_hosts} (unknown there, or changed); compare the fingerprint from "
        f"`{scan} | ssh-keygen -lf -` with the one on the board's console, then add it with "
        f"`{scan} >> {shlex.quote(known_hosts)}` "
        "(after removing a stale one: ssh-keygen -R)"
    )
