"""The [[target]] options of kind = "labgrid", validated into LabgridOptions (nothing is opened here)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from jitterlab.model.errors import UserError, shown
from jitterlab.model.registry import did_you_mean
from jitterlab.programs import check_cc
from jitterlab.targets.images import ImageOptions, split_image_options

_LOGIN = re.compile(r"^[A-Za-z0-9_][A-Za-z0-9_.@+-]{0,63}$")  # ssh -l reads it
OPTIONS = {
    "place": 'a place on the labgrid coordinator, e.g. place = "bbb-1"',
    "coordinator": 'HOST:PORT of labgrid-coordinator (default: LG_COORDINATOR, else "127.0.0.1:20408")',
    "env": 'a labgrid environment file instead of a place, e.g. env = "board.yaml"',
    "role": 'the target of the env file, e.g. role = "main" (default: its only target, else "main")',
    "service": "which NetworkService of the place, when it has several (its resource name)",
    "keyfile": 'identity file for SSH, e.g. keyfile = "~/.ssh/id_ed25519" (default: ssh\'s own)',
    "username": "login name, instead of the NetworkService's",
    "workdir": 'absolute directory on the board for jitterlab\'s files (default: "/tmp/jitterlab-<user>")',
    "cc": 'cross compiler on this machine, e.g. cc = "aarch64-linux-gnu-gcc": jitterlab\'s programs are '
          "built here, static, for a board without a compiler",
    "known_hosts": "a known_hosts file with the board's key: its host key is then verified like an ssh "
                   "target's (labgrid's SSHDriver itself does not check host keys)",
}


@dataclass(frozen=True)
class LabgridOptions:
    place: str | None = None
    coordinator: str | None = None
    env: str | None = None
    role: str | None = None
    service: str | None = None
    keyfile: str | None = None
    username: str | None = None
    workdir: str | None = None
    known_hosts: str | None = None
    cc: str | None = None
    images: ImageOptions | None = None  # an image campaign: the images to flash, per label value


def parse_options(options: Mapping[str, object], where: str) -> LabgridOptions:
    """Check the options of one labgrid target; `where` is e.g. "campaign.toml: target[1]"."""
    options, images = split_image_options(options, where)
    for key in options:
        if key not in OPTIONS:
            hint = did_you_mean(str(key), list(OPTIONS))
            raise UserError(
                f"{where}.{key}: unknown option of a labgrid target; {hint}known: {', '.join(OPTIONS)}"
            )
    for key, value in options.items():
        if (not isinstance(value, str) or not value.strip() or len(value) > 4096
                or any(not c.isprintable() for c in value)):
            raise UserError(f"{where}.{key}: expected one line of text ({OPTIONS[key]}), got {shown(value)}")
    username = options.get("username")
    if isinstance(username, str) and not _LOGIN.match(username):
        raise UserError(f'{where}.username: expected a login name, e.g. username = "root", '
                        f"got {shown(username)}")
    if "cc" in options:
        check_cc(options["cc"], f"{where}.cc")
    values: dict[str, str] = {str(k): " ".join(str(v).split()) if k == "cc" else str(v)
                              for k, v in options.items()}
    if ("place" in values) == ("env" in values):
        raise UserError(
            f'{where}: a labgrid target names either place = "NAME" (a place on a coordinator) or '
            'env = "board.yaml" (a labgrid environment file), not both or neither'
        )
    for key in ("coordinator", "service"):
        if key in values and "env" in values:
            raise UserError(
                f"{where}.{key}: goes with place; an env file names its own (coordinator_address)"
            )
    if "role" in values and "env" not in values:
        raise UserError(f'{where}.role: only with env = "board.yaml" (a role of that file)')
    if "workdir" in values and not values["workdir"].startswith("/"):
        raise UserError(f"{where}.workdir: must be an absolute path, got {shown(values['workdir'])}")
    for key in ("env", "keyfile", "known_hosts"):
        if key in values:
            values[key] = os.path.abspath(os.path.expanduser(values[key]))
            if not os.path.isfile(values[key]):
                raise UserError(
                    f"{where}.{key}: {values[key]} does not exist (a relative path starts at {os.getcwd()})"
                )
    return LabgridOptions(**values, images=images)
