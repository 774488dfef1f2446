"""Target kinds users can name in [[target]] kind = ..., and the checks of their options."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from jitterlab.model.registry import Registry
from jitterlab.targets.base import Target
from jitterlab.targets.fake import open_fake
from jitterlab.targets.fake import parse_options as _fake_options
from jitterlab.targets.labgrid.target import LabgridTarget
from jitterlab.targets.labgrid.target import parse_options as _labgrid_options
from jitterlab.targets.local import LocalTarget, workdir_only
from jitterlab.targets.qemu.options import parse_options as _qemu_options
from jitterlab.targets.qemu.target import QemuTarget
from jitterlab.targets.ssh.options import parse_options as _ssh_options
from jitterlab.targets.ssh.target import SSHTarget
from jitterlab.targets.unit import target as unit

TargetFactory = Callable[[str, Mapping[str, object]], Target]
TARGETS: Registry[TargetFactory] = Registry("target kind")

# kind -> check(options, where) raising UserError "<where>.<key>: what is wrong; the fix", where
# is e.g. "campaign.toml: target[1]"; campaign files are checked with it before anything connects.
# A kind without a check gets its options as they are; its factory must check them.
OptionCheck = Callable[[Mapping[str, object], str], object]
OPTION_CHECKS: dict[str, OptionCheck] = {}


def check_options(kind: str, options: Mapping[str, object], where: str) -> None:
    """The options of a [[target]] of `kind`: its `unit` table (any kind may have a unit beside it),
    then the kind's own."""
    unit.check(kind, OPTION_CHECKS.get(kind))(options, where)


def _local_options(options: Mapping[str, object], where: str) -> str | None:
    return workdir_only(options, where, "local")


def _local(name: str, options: Mapping[str, object], devices: tuple[str, ...] = ()) -> Target:
    return LocalTarget(name, _local_options(options, f"target {name!r}"))


def _ssh(name: str, options: Mapping[str, object], devices: tuple[str, ...] = ()) -> Target:
    target = SSHTarget(name, _ssh_options(options, f"target {name!r}", check_files=True))
    try:
        return target.connect()
    except BaseException:
        target.close()
        raise


def _qemu(name: str, options: Mapping[str, object], devices: tuple[str, ...] = ()) -> Target:
    target = QemuTarget(name, _qemu_options(options, f"target {name!r}", check_files=True), devices=devices)
    try:
        return target.boot()
    except BaseException:
        target.close()
        raise


TARGETS.add("local", "this machine", unit.opener("local", _local))
OPTION_CHECKS["local"] = _local_options
TARGETS.add(
    "ssh",
    "a machine reached with the OpenSSH client (host, port, user, key, known_hosts, ...)",
    unit.opener("ssh", _ssh),
)
OPTION_CHECKS["ssh"] = _ssh_options
TARGETS.add(
    "labgrid",
    "a board of a labgrid farm: place = a place on a coordinator, or env = a labgrid env file (SSH); "
    "known_hosts = a file with its host key, which labgrid itself does not check",
    unit.opener("labgrid", lambda name, options, _: LabgridTarget(
        name, _labgrid_options(options, f"target {name!r}"))),
)
OPTION_CHECKS["labgrid"] = _labgrid_options
TARGETS.add(
    "qemu",
    'a Debian kernel booted here with qemu, over SSH: machine = "pc" (this machine\'s root) or an '
    'emulated ARM board with its own root ("virt-arm64", "virt-armhf", "sabrelite"); kernel = '
    '"standard" | "rt" | "6.12" | a kernel file',
    unit.opener("qemu", _qemu),
)
OPTION_CHECKS["qemu"] = _qemu_options
TARGETS.add(
    "fake",
    "for jitterlab's own tests: a machine that is not there (commands succeed silently, processes are "
    "fake, on a fake clock); workdir",
    open_fake,
)
OPTION_CHECKS["fake"] = _fake_options
