"""A board of a labgrid farm: a place on a labgrid coordinator, or a target of a labgrid environment file.

labgrid finds the board and owns the SSH connection: jitterlab acquires the place (and releases it on
close), makes the NetworkService the place's exporter announces, and activates labgrid's SSHDriver,
which starts an OpenSSH ControlMaster (key, password, proxy through the exporter). Commands and files
then travel as sessions over that master with the driver's own ssh arguments, by the ssh target's
machinery (ssh_sessions.py): SSHDriver.run cannot kill a command that timed out and splits output into
lines, and its put/get run scp with its progress meter on our terminal.

This module opens, connects and closes the board; the coordinator's places are `coordinator.py`, the
SSHDriver and its NetworkService `connection.py`, flashing and booting an image `images.py`.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sys
import threading
from pathlib import Path
from typing import Any

from jitterlab.model.errors import TargetLost, UserError
from jitterlab.model.registry import did_you_mean
from jitterlab.targets.capabilities import Capability, CrossBuilt, FlashesImages, HostKeyStatus
from jitterlab.targets.labgrid import images as labgrid_images
from jitterlab.targets.labgrid.connection import activate_ssh, network_service
from jitterlab.targets.labgrid.coordinator import (
    DEFAULT_COORDINATOR,
    acquire,
    one_coordinator,
    places_seen,
    release,
)
from jitterlab.targets.labgrid.host_key import UNVERIFIED
from jitterlab.targets.labgrid.messages import require_labgrid, where
from jitterlab.targets.labgrid.options import LabgridOptions, parse_options
from jitterlab.targets.ssh.sessions import OverSSH, SSHSessions

__all__ = ["LabgridTarget", "parse_options"]  # the registry of target kinds takes both from here


def _one_line(text: str) -> str:
    return " ".join(text.split())


# labgrid's steps (every driver call) are one stack per process: two boards' drivers called from two
# threads break it, so boards are flashed, booted and connected one at a time (they measure in
# parallel: commands go over jitterlab's own SSH sessions)
_LABGRID = threading.RLock()


class LabgridTarget(OverSSH, HostKeyStatus, FlashesImages, CrossBuilt):
    """A board reached through labgrid: run, spawn, put and get over the SSHDriver's connection;
    flashed with another image through its power, image writer and console drivers."""

    def __init__(self, name: str, options: LabgridOptions, *, connect: bool | None = None) -> None:
        """Open the board (acquire its place, or load its env file) and, unless told otherwise,
        connect by SSH. A board that names images connects when first used instead: its image
        campaign flashes and boots it first (capabilities.FlashesImages), other commands
        (doctor) reach the image it runs."""
        require_labgrid(name)
        self.name = name
        self.options = options
        self.coordinator = options.coordinator or os.environ.get("LG_COORDINATOR") or DEFAULT_COORDINATOR
        self._held: list[str] = []  # places we acquired and must release
        self._sessions: SSHSessions | None = None  # type: ignore[assignment]
        self._driver: Any = None
        self._workdir = ""
        self._lg_target: Any = None
        self._env: Any = None
        self._connect_on_use = False
        self._connecting = threading.Lock()
        try:
            if options.env is not None:
                self._lg_target = self._from_env(options.env, options.role)
            else:
                assert options.place is not None
                self._lg_target = self._from_place(options.place, options.service)
            if connect if connect is not None else options.images is None:
                self.connect()
            else:
                self._connect_on_use = connect is None
        except BaseException:
            with contextlib.suppress(Exception):  # the reason we could not open matters more
                self.close()
            raise

    @property
    def board(self) -> Any:
        """The labgrid Target (its drivers: power, console, image writer)."""
        return self._lg_target

    def offers(self, cap: type[Capability]) -> bool:
        return cap is not CrossBuilt or self.options.cc is not None

    @property
    def cross_cc(self) -> str:
        """Programs are built on this machine with it (`cc` of its [[target]]), not on the board."""
        assert self.options.cc is not None, "cross_cc of a labgrid target without cc"
        return self.options.cc

    @property
    def host_key_verified(self) -> bool:
        return self.options.known_hosts is not None

    @property
    def host_key_unverified(self) -> tuple[str, str]:
        return UNVERIFIED

    @property
    def workdir(self) -> str:  # type: ignore[override]
        if self._connect_on_use:
            self._live_sessions()
        return self._workdir

    def _live_sessions(self) -> SSHSessions:
        with self._connecting:
            if self._sessions is None and self._connect_on_use:
                self.connect()
        if self._sessions is None:
            raise TargetLost(f"{where(self.name)}: not connected (its image is being flashed or booted)")
        return self._sessions

    def install(self, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
        self._connect_on_use = False  # from now on the image campaign says when to connect
        try:
            with _LABGRID:
                return labgrid_images.install(self._lg_target, image, boot_prompt, boot_timeout_s)
        except UserError as exc:
            raise UserError(f"{where(self.name)}: {exc}") from None

    def connect(self) -> None:
        """Open the SSH connection (once the board runs); the board stays open when it fails."""
        name, options = self.name, self.options
        self._connect_on_use = False
        with _LABGRID:
            self._driver = activate_ssh(name, self._lg_target, options.keyfile, options.username,
                                         options.known_hosts)
        service = self._driver.networkservice
        self.username = self._driver._get_username()
        self.address = f"{self.username}@{service.address}:{service.port}"
        ssh = [self._driver._get_tool("ssh"), "-x", *self._driver.ssh_prefix, "-o", "BatchMode=yes"]
        ssh += ["-p", str(service.port), "-l", self.username, "--", service.address]
        self._sessions = SSHSessions(
            name,
            f"{where(name)} {self.address}",
            lambda remote: [*ssh, shlex.join(remote)],
            control_path=self._driver.control,
            connect_timeout_s=self._driver.connection_timeout,
        )
        self._workdir = self._sessions.connect(options.workdir)

    # -- opening --------------------------------------------------------------------------------------

    def _from_place(self, place: str, service: str | None) -> Any:
        from labgrid import Target as LgTarget

        resources = acquire(self.name, self.coordinator, place, self._held)
        lg_target = LgTarget(place)
        network_service(self.name, lg_target, resources, service)
        return lg_target

    def _from_env(self, env: str, role: str | None) -> Any:
        from labgrid import Environment, target_factory
        from labgrid.exceptions import InvalidConfigError, NoConfigFoundError

        path = Path(env)
        try:
            self._env = Environment(str(path))
            roles = self._env.config.get_targets()
        except (NoConfigFoundError, InvalidConfigError) as exc:
            raise UserError(f"{where(self.name)}: env: {path}: {_one_line(exc.msg)}") from None
        except Exception as exc:  # the message says what is wrong
            raise UserError(
                f"{where(self.name)}: env: {path} is not a labgrid environment: {_one_line(str(exc))}"
            ) from None
        if not isinstance(roles, dict) or not roles:
            raise UserError(f"{where(self.name)}: env: {path} has no targets: section")
        if role is None:
            role = "main" if "main" in roles or len(roles) != 1 else next(iter(roles))
        if role not in roles:
            hint = did_you_mean(role, list(roles))
            raise UserError(
                f"{where(self.name)}: role: {path} has no target {role!r}; {hint}roles: {', '.join(roles)}"
            )
        try:
            resources, _ = target_factory.normalize_config(roles[role])
        except Exception as exc:
            raise UserError(
                f"{where(self.name)}: env: {path}: targets.{role}: {_one_line(str(exc))}"
            ) from None
        # a RemotePlace is acquired here like place = "..."; labgrid then expands it itself
        self.coordinator = self._env.config.get_option("coordinator_address", self.coordinator)
        if resources.get("RemotePlace"):
            one_coordinator(self.name, path, self.coordinator)
        for place in resources.get("RemotePlace", {}):
            acquire(self.name, self.coordinator, place, self._held)
        try:
            with _LABGRID:
                if resources.get("RemotePlace"):
                    places_seen()
                return self._env.get_target(role)
        except Exception as exc:
            raise UserError(
                f"{where(self.name)}: env: {path}: targets.{role}: {_one_line(str(exc))}"
            ) from None

    # -- the Target protocol (run/spawn/put/get: OverSSH) ---------------------------------------------

    def disconnect(self) -> None:
        """End the SSH connection and keep the board (an image campaign flashes it next)."""
        if self._sessions is not None:
            self._sessions.close()
            self._sessions = None
        self._connect_on_use = False
        driver, self._driver = self._driver, None
        if driver is not None and self._lg_target is not None:
            with _LABGRID, contextlib.suppress(Exception):
                self._lg_target.deactivate(driver)

    def close(self) -> None:
        """Stop what we spawned, end the SSH master, release the places we acquired. Idempotent.
        A place that cannot be released is a UserError naming the command that releases it; when
        close() runs while another error goes up (a `finally`), that error is kept and told, and
        the place is tried again by the next close()."""
        going_up = sys.exception()
        self._connect_on_use = False
        if self._sessions is not None:
            self._sessions.close()
            self._sessions = None
        lg_target, self._lg_target = self._lg_target, None
        if lg_target is not None:
            with _LABGRID, contextlib.suppress(Exception):
                lg_target.cleanup()  # deactivates the SSHDriver: its master and keepalive end
        held, self._held = self._held, []
        for i, place in enumerate(held):
            try:
                release(self.name, self.coordinator, place)
            except Exception as exc:
                failed = (f"{where(self.name)}: could not release place {place!r} ({exc}); release it "
                          f"with labgrid-client -x {self.coordinator} -p {place} release")
                if going_up is None:
                    self._held = held[i + 1:]  # the next close() releases the others
                    raise UserError(failed) from None
                going_up.add_note(failed)  # raised here, it would hide the error that goes up
                self._held.append(place)
