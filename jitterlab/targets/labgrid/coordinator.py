"""The labgrid coordinator: one short client session per action (a place stays acquired between
sessions): a place found, acquired (refused when another holds it) and released."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from jitterlab.model.errors import UserError
from jitterlab.model.registry import did_you_mean
from jitterlab.targets.labgrid.messages import collected_logs, where

DEFAULT_COORDINATOR = "127.0.0.1:20408"
COORDINATOR_TIMEOUT_S = 10.0
# labgrid's client keepalive settings, and a connection of our own (see coordinator_call)
_CHANNEL_OPTIONS = [
    ("grpc.keepalive_time_ms", 7500),
    ("grpc.keepalive_timeout_ms", 10000),
    ("grpc.http2.ping_timeout_ms", 10000),
    ("grpc.http2.max_pings_without_data", 0),
    ("grpc.use_local_subchannel_pool", 1),
]


def coordinator_call(name: str, address: str, action: Callable[[Any], Any]) -> Any:
    """Open a client session to the coordinator, `await action(session)`, close the session."""
    import asyncio  # here: 30 ms at every start of jitterlab, for a campaign without a labgrid board

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
            with collected_logs(logging.getLogger()) as lines:
                try:
                    await asyncio.wait_for(session.start(), COORDINATOR_TIMEOUT_S)
                except Exception:
                    why = lines[-1] if lines else f"no answer within {COORDINATOR_TIMEOUT_S:g}s"
                    raise UserError(
                        f"{where(name)}: the labgrid coordinator at {address} is unreachable ({why}); "
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
        f"{where(name)}: place {place!r} does not exist on the coordinator {address}; {hint}{known} "
        f"(create one with labgrid-client -p {place} create)"
    )


def _me(session: Any) -> str:
    return f"{session.gethostname()}/{session.getuser()}"


def _refuse_if_taken(name: str, address: str, place: Any, me: str) -> None:
    if place.acquired and place.acquired != me and me not in place.allowed:
        client = f"labgrid-client -x {address} -p {place.name}"
        raise UserError(
            f"{where(name)}: place {place.name!r} is acquired by {place.acquired} (you are {me}); "
            f"ask them to release it ({client} release) or to allow you ({client} allow {me}), "
            f"or, if it is stale, {client} release --kick"
        )


def acquire(name: str, address: str, place_name: str, held: list[str]) -> dict[tuple[str, str], Any]:
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
                    f"{where(name)}: place {place_name!r}: {exc.args[0] if exc.args else exc} "
                    "(is its labgrid-exporter running? see labgrid-client resources)"
                ) from None
            held.append(place_name)  # releasing is harmless if this fails: it names us as holder
            try:
                await session.stub.AcquirePlace(pb.AcquirePlaceRequest(placename=place_name))
            except grpc.aio.AioRpcError as exc:
                await session.sync_with_coordinator()
                _refuse_if_taken(name, address, session.places[place_name], me)  # someone was quicker
                raise UserError(
                    f"{where(name)}: cannot acquire place {place_name!r}: {exc.details()}"
                ) from None
            await session.sync_with_coordinator()
        try:
            return session.get_target_resources(session.places[place_name])
        except LabgridError as exc:
            raise UserError(
                f"{where(name)}: place {place_name!r}: {exc.args[0] if exc.args else exc}"
            ) from None

    return coordinator_call(name, address, action)


async def _release_in(session: Any, place_name: str) -> None:
    from labgrid.remote.generated import labgrid_coordinator_pb2 as pb

    await session.stub.ReleasePlace(pb.ReleasePlaceRequest(placename=place_name, fromuser=_me(session)))
    await session.sync_with_coordinator()


def release(name: str, address: str, place_name: str) -> None:
    coordinator_call(name, address, lambda session: _release_in(session, place_name))


def places_seen() -> None:
    """Bring labgrid's own RemotePlace session up to date with the coordinator: it reads places once
    when opened and then only when its loop runs, so a place acquired since (the second board of a
    campaign) would look unacquired to it ("place ... is not acquired")."""
    from labgrid.resource.common import ResourceManager
    from labgrid.resource.remote import RemotePlaceManager

    manager = ResourceManager.instances.get(RemotePlaceManager)
    if manager is not None and manager.session is not None and not manager.loop.is_running():
        manager.loop.run_until_complete(manager.session.sync_with_coordinator())


def one_coordinator(name: str, env: Path, address: str) -> None:
    """labgrid expands every RemotePlace of a process through one coordinator session, the first one
    opened: a place on another coordinator would be looked for there, and not found."""
    from labgrid.resource.common import ResourceManager
    from labgrid.resource.remote import RemotePlaceManager

    manager = ResourceManager.instances.get(RemotePlaceManager)
    if manager is not None and manager.session is not None and manager.url != address:
        raise UserError(
            f"{where(name)}: env: {env}: its RemotePlace is on the coordinator {address}, but labgrid "
            f"already reaches RemotePlaces through {manager.url} in this process (one coordinator per "
            "process); measure the boards of each coordinator in a campaign of their own"
        )
