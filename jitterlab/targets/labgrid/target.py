"""A board of a labgrid farm: a place on a labgrid coordinator, or a target of a labgrid environment file.

labgrid finds the board and owns the SSH connection: jitterlab acquires the place (and releases it on
close), makes the NetworkService the place's exporter announces, and activates labgrid's SSHDriver,
which starts an OpenSSH ControlMaster (key, password, proxy through the exporter). Commands and files
then travel as sessions over that master with the driver's own ssh arguments, by the ssh target's
machinery (ssh_sessions.py): SSHDriver.run cannot kill a command that timed out and splits output into
lines, and its put/get run scp with its progress meter on our terminal.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import shlex
import sys
import threading
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from jitterlab.model.errors import TargetLost, UserError
from jitterlab.model.registry import did_you_mean
from jitterlab.targets.capabilities import Capability, CrossBuilt, FlashesImages, HostKeyStatus
from jitterlab.targets.labgrid import images as labgrid_images
from jitterlab.targets.labgrid.host_key import UNVERIFIED, host_key_refused, verify_host_key
from jitterlab.targets.labgrid.options import LabgridOptions, parse_options
from jitterlab.targets.ssh.sessions import OverSSH, SSHSessions

__all__ = ["LabgridTarget", "parse_options"]  # the registry of target kinds takes both from here

DEFAULT_COORDINATOR = "127.0.0.1:20408"
COORDINATOR_TIMEOUT_S = 10.0
# labgrid's client keepalive settings, and a connection of our own (see _coordinator_call)
_CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 7500),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.ping_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.use_local_subchannel_pool", 1),
]


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _where(name: str) -> str:
    return f"target {name!r} (labgrid)"


def _require_labgrid(name: str) -> None:
    try:
        import labgrid  # noqa: F401
        from labgrid.remote.generated import labgrid_coordinator_pb2  # noqa: F401
    except ImportError as exc:
        too_old = exc.name and exc.name.startswith("labgrid.")
        what = "is too old (the gRPC coordinator came with 24.0)" if too_old else "is not installed"
        raise UserError(
            f"{_where(name)}: the labgrid package {what}; install it with "
            "pip install 'jitterlab[labgrid]' (labgrid >= 24)"
        ) from None


@contextlib.contextmanager
def _collected_logs(*loggers: logging.Logger) -> Iterator[list[str]]:
    """Gather what labgrid logs (for our one-line errors) instead of letting it reach the terminal."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage().strip())

    handler = Collect(logging.WARNING)
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg, _ in saved:
        lg.addHandler(handler)
        if lg is not logging.getLogger():
            lg.propagate = False
    try:
        yield lines
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate


# ---------------------------------------------------------------------------------------------------
# the coordinator: one short client session per action (a place stays acquired between sessions)


def _coordinator_call(name: str, address: str, action: Callable[[Any], Any]) -> Any:
    """Open a client session to the coordinator, `await action(session)`, close the session."""
    import grpc
    from labgrid.remote.client import ClientSession
    from labgrid.remote.generated import labgrid_coordinator_pb2_grpc
    from labgrid.util.proxy import proxymanager

    async def main() -> Any:
        url = proxymanager.get_grpc_address(address, default_port=20408)
        session = ClientSession(url, asyncio.get_running_loop())  # the channel binds to this loop
        await session.channel.close()
        # grpc shares one TCP connection between the channels of a process, and the coordinator
        # refuses a second client on one connection (labgrid's RemotePlace keeps its own session)
        session.channel = grpc.aio.insecure_channel(url, options=_CHANNEL_OPTIONS)
        session.stub = labgrid_coordinator_pb2_grpc.CoordinatorStub(session.channel)
        try:
            with _collected_logs(logging.getLogger()) as lines:
                try:
                    await asyncio.wait_for(session.start(), COORDINATOR_TIMEOUT_S)
                except Exception:
                    why = lines[-1] if lines else f"no answer within {COORDINATOR_TIMEOUT_S:g}s"
                    raise UserError(
                        f"{_where(name)}: the labgrid coordinator at {address} is unreachable ({why}); "
                        'start labgrid-coordinator there, or set coordinator = "HOST:PORT" '
                        "(or LG_COORDINATOR)"
                    ) from None
            return await action(session)
        finally:
            with contextlib.suppress(Exception):
                await session.stop()
            with contextlib.suppress(Exception):
                await session.close()

    # a fresh loop per action: close() may run on another thread than open (Ctrl-C)
    return asyncio.run(main())


def _find_place(session: Any, name: str, place: str, address: str) -> Any:
    if place in session.places:
        return session.places[place]
    names = sorted(session.places)
    hint = did_you_mean(place, names)
    known = f"known: {', '.join(names)}" if names else "it has no places yet"
    raise UserError(
        f"{_where(name)}: place {place!r} does not exist on the coordinator {address}; {hint}{known} "
        f"(create one with labgrid-client -p {place} create)"
    )


def _me(session: Any) -> str:
    return f"{session.gethostname()}/{session.getuser()}"


def _refuse_if_taken(name: str, address: str, place: Any, me: str) -> None:
    if place.acquired and place.acquired != me and me not in place.allowed:
        client = f"labgrid-client -x {address} -p {place.name}"
        raise UserError(
            f"{_where(name)}: place {place.name!r} is acquired by {place.acquired} (you are {me}); "
            f"ask them to release it ({client} release) or to allow you ({client} allow {me}), "
            f"or, if it is stale, {client} release --kick"
        )


def _acquire(name: str, address: str, place_name: str, held: list[str]) -> dict[tuple[str, str], Any]:
    """Acquire the place unless we hold it already, noting it in `held` (to release) before asking,
    so that an interruption cannot leave it acquired; {(resource name, cls): entry} of the place."""
    import grpc
    from labgrid.remote.client import Error as LabgridError
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

    async def action(session: Any) -> dict[tuple[str, str], Any]:
        place = _find_place(session, name, place_name, address)
        me = _me(session)
        _refuse_if_taken(name, address, place, me)
        if not place.acquired:
            try:
                session.check_matches(place)
            except LabgridError as exc:
                raise UserError(
                    f"{_where(name)}: place {place_name!r}: {exc.args[0] if exc.args else exc} "
                    "(is its labgrid-exporter running? see labgrid-client resources)"
                ) from None
            held.append(place_name)  # releasing is harmless if this fails: it names us as holder
            try:
                await session.stub.AcquirePlace(pb.AcquirePlaceRequest(placename=place_name))
            except grpc.aio.AioRpcError as exc:
                await session.sync_with_coordinator()
                _refuse_if_taken(name, address, session.places[place_name], me)  # someone was quicker
                raise UserError(
                    f"{_where(name)}: cannot acquire place {place_name!r}: {exc.details()}"
                ) from None
            await session.sync_with_coordinator()
        try:
            return session.get_target_resources(session.places[place_name])
        except LabgridError as exc:
            raise UserError(
                f"{_where(name)}: place {place_name!r}: {exc.args[0] if exc.args else exc}"
            ) from None

    return _coordinator_call(name, address, action)


async def _release_in(session: Any, place_name: str) -> None:
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

    await session.stub.ReleasePlace(pb.ReleasePlaceRequest(placename=place_name, fromuser=_me(session)))
    await session.sync_with_coordinator()


def _release(name: str, address: str, place_name: str) -> None:
    _coordinator_call(name, address, lambda session: _release_in(session, place_name))


# ---------------------------------------------------------------------------------------------------
# the SSH connection: labgrid's SSHDriver, and extra sessions over its ControlMaster


def _network_service(
    name: str, lg_target: Any, resources: Mapping[tuple[str, str], Any], service: str | None
):
    """Make the NetworkService a place announced (with its proxy information) on a labgrid Target."""
    from labgrid import target_factory

    found = {rname: entry for (rname, cls), entry in resources.items() if cls == "NetworkService"}
    if service is not None and service not in found:
        found = {}
    if not found:
        which = f"NetworkService {service!r}" if service else "NetworkService resource"
        raise UserError(
            f"{_where(name)}: place {lg_target.name!r} has no {which}, so jitterlab cannot reach its "
            "board by SSH; "
            "export one (NetworkService: {address, username}) and add it with "
            f"labgrid-client -p {lg_target.name} add-match EXPORTER/GROUP/NetworkService/NAME"
        )
    if len(found) > 1:
        raise UserError(
            f"{_where(name)}: the place has several NetworkServices ({', '.join(sorted(found))}); "
            'choose one with service = "NAME"'
        )
    rname, entry = next(iter(found.items()))
    resource = target_factory.make_resource(lg_target, "NetworkService", rname, entry.args)
    resource.extra = entry.extra  # tells SSHDriver to go through the exporter when it must
    return resource


def _one_coordinator(name: str, env: Path, address: str) -> None:
    """labgrid expands every RemotePlace of a process through one coordinator session, the first one
    opened: a place on another coordinator would be looked for there, and not found."""
    from labgrid.resource.common import ResourceManager
    from labgrid.resource.remote import RemotePlaceManager

    manager = ResourceManager.instances.get(RemotePlaceManager)
    if manager is not None and manager.session is not None and manager.url != address:
        raise UserError(
            f"{_where(name)}: env: {env}: its RemotePlace is on the coordinator {address}, but labgrid "
            f"already reaches RemotePlaces through {manager.url} in this process (one coordinator per "
            "process); measure the boards of each coordinator in a campaign of their own"
        )


def _activate_ssh(name: str, lg_target: Any, keyfile: str | None, username: str | None,
                  known_hosts: str | None = None) -> Any:
    """The target's SSHDriver (from the env file, else a new one), activated: its master runs."""
    from labgrid.driver import SSHDriver
    from labgrid.exceptions import NoDriverFoundError, NoResourceFoundError

    try:
        driver = lg_target.get_driver(SSHDriver, activate=False)
    except NoDriverFoundError:
        try:
            driver = SSHDriver(lg_target, name=None, keyfile=keyfile or "", username=username or "")
        except NoResourceFoundError:
            raise UserError(
                f"{_where(name)}: labgrid target {lg_target.name!r} has no NetworkService resource, "
                "so jitterlab cannot reach it by SSH; add one (address, username) to its resources"
            ) from None
    else:
        if keyfile:
            driver.keyfile = keyfile
        if username:
            driver.username = username
    service = driver.networkservice
    if known_hosts is not None:
        verify_host_key(driver, known_hosts)
    with _collected_logs(driver.logger) as lines:
        try:
            lg_target.activate(driver)
        except Exception as exc:
            said = [line.removeprefix("ssh:").strip() for line in lines]
            refused = host_key_refused(name, service, known_hosts, said) if known_hosts else None
            if refused is not None:
                raise refused from None
            why = next((line for line in reversed(said) if line), str(exc))
            raise UserError(
                f"{_where(name)}: cannot connect by SSH to {driver._get_username()}@{service.address}"
                f":{service.port}: {why}; check the address, that sshd runs there, and the key "
                "(keyfile = ..., or SSHDriver keyfile in the env file)"
            ) from None
    return driver


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
        _require_labgrid(name)
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
            raise TargetLost(f"{_where(self.name)}: not connected (its image is being flashed or booted)")
        return self._sessions

    def install(self, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
        self._connect_on_use = False  # from now on the image campaign says when to connect
        try:
            with _LABGRID:
                return labgrid_images.install(self._lg_target, image, boot_prompt, boot_timeout_s)
        except UserError as exc:
            raise UserError(f"{_where(self.name)}: {exc}") from None

    def connect(self) -> None:
        """Open the SSH connection (once the board runs); the board stays open when it fails."""
        name, options = self.name, self.options
        self._connect_on_use = False
        with _LABGRID:
            self._driver = _activate_ssh(name, self._lg_target, options.keyfile, options.username,
                                         options.known_hosts)
        service = self._driver.networkservice
        self.username = self._driver._get_username()
        self.address = f"{self.username}@{service.address}:{service.port}"
        ssh = [self._driver._get_tool("ssh"), "-x", *self._driver.ssh_prefix, "-o", "BatchMode=yes"]
        ssh += ["-p", str(service.port), "-l", self.username, "--", service.address]
        self._sessions = SSHSessions(
            name,
            f"{_where(name)} {self.address}",
            lambda remote: [*ssh, shlex.join(remote)],
            control_path=self._driver.control,
            connect_timeout_s=self._driver.connection_timeout,
        )
        self._workdir = self._sessions.connect(options.workdir)

    # -- opening --------------------------------------------------------------------------------------

    def _from_place(self, place: str, service: str | None) -> Any:
        from labgrid import Target as LgTarget

        resources = _acquire(self.name, self.coordinator, place, self._held)
        lg_target = LgTarget(place)
        _network_service(self.name, lg_target, resources, service)
        return lg_target

    def _from_env(self, env: str, role: str | None) -> Any:
        from labgrid import Environment, target_factory
        from labgrid.exceptions import InvalidConfigError, NoConfigFoundError

        path = Path(env)
        try:
            self._env = Environment(str(path))
            roles = self._env.config.get_targets()
        except (NoConfigFoundError, InvalidConfigError) as exc:
            raise UserError(f"{_where(self.name)}: env: {path}: {_one_line(exc.msg)}") from None
        except Exception as exc:  # the message says what is wrong
            raise UserError(
                f"{_where(self.name)}: env: {path} is not a labgrid environment: {_one_line(str(exc))}"
            ) from None
        if not isinstance(roles, dict) or not roles:
            raise UserError(f"{_where(self.name)}: env: {path} has no targets: section")
        if role is None:
            role = "main" if "main" in roles or len(roles) != 1 else next(iter(roles))
        if role not in roles:
            hint = did_you_mean(role, list(roles))
            raise UserError(
                f"{_where(self.name)}: role: {path} has no target {role!r}; {hint}roles: {', '.join(roles)}"
            )
        try:
            resources, _ = target_factory.normalize_config(roles[role])
        except Exception as exc:
            raise UserError(
                f"{_where(self.name)}: env: {path}: targets.{role}: {_one_line(str(exc))}"
            ) from None
        # a RemotePlace is acquired here like place = "..."; labgrid then expands it itself
        self.coordinator = self._env.config.get_option("coordinator_address", self.coordinator)
        if resources.get("RemotePlace"):
            _one_coordinator(self.name, path, self.coordinator)
        for place in resources.get("RemotePlace", {}):
            _acquire(self.name, self.coordinator, place, self._held)
        try:
            return self._env.get_target(role)
        except Exception as exc:
            raise UserError(
                f"{_where(self.name)}: env: {path}: targets.{role}: {_one_line(str(exc))}"
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
                _release(self.name, self.coordinator, place)
            except Exception as exc:
                failed = (f"{_where(self.name)}: could not release place {place!r} ({exc}); release it "
                          f"with labgrid-client -x {self.coordinator} -p {place} release")
                if going_up is None:
                    self._held = held[i + 1:]  # the next close() releases the others
                    raise UserError(failed) from None
                going_up.add_note(failed)  # raised here, it would hide the error that goes up
                self._held.append(place)
