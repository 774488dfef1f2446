"""The SSH connection to a labgrid board: labgrid's SSHDriver, activated on the NetworkService its
place announces (or its env file names); jitterlab's own sessions then go over its ControlMaster."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from jitterlab.model.errors import UserError
from jitterlab.targets.labgrid.host_key import host_key_refused, verify_host_key
from jitterlab.targets.labgrid.messages import collected_logs, where


def network_service(
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
            f"{where(name)}: place {lg_target.name!r} has no {which}, so jitterlab cannot reach its "
            "board by SSH; "
            "export one (NetworkService: {address, username}) and add it with "
            f"labgrid-client -p {lg_target.name} add-match EXPORTER/GROUP/NetworkService/NAME"
        )
    if len(found) > 1:
        raise UserError(
            f"{where(name)}: the place has several NetworkServices ({', '.join(sorted(found))}); "
            'choose one with service = "NAME"'
        )
    rname, entry = next(iter(found.items()))
    resource = target_factory.make_resource(lg_target, "NetworkService", rname, entry.args)
    resource.extra = entry.extra  # tells SSHDriver to go through the exporter when it must
    return resource


def activate_ssh(name: str, lg_target: Any, keyfile: str | None, username: str | None,
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
                f"{where(name)}: labgrid target {lg_target.name!r} has no NetworkService resource, "
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
    with collected_logs(driver.logger) as lines:
        try:
            lg_target.activate(driver)
        except Exception as exc:
            said = [line.removeprefix("ssh:").strip() for line in lines]
            refused = host_key_refused(name, service, known_hosts, said) if known_hosts else None
            if refused is not None:
                raise refused from None
            why = next((line for line in reversed(said) if line), str(exc))
            raise UserError(
                f"{where(name)}: cannot connect by SSH to {driver._get_username()}@{service.address}"
                f":{service.port}: {why}; check the address, that sshd runs there, and the key "
                "(keyfile = ..., or SSHDriver keyfile in the env file)"
            ) from None
    return driver
