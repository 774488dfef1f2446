"""Target kinds users can name in [[target]] kind = ..., and the checks of their options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Protocol

from jitterlab.model.registry import Registry
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import Capability, CrossBuilt, Declared, kind_capabilities
from jitterlab.targets.fake import FakeTarget, open_fake
from jitterlab.targets.fake import parse_options as _fake_options
from jitterlab.targets.labgrid.target import LabgridTarget
from jitterlab.targets.labgrid.target import parse_options as _labgrid_options
from jitterlab.targets.local import LocalTarget, workdir_only
from jitterlab.targets.qemu.machines.registry import MACHINES
from jitterlab.targets.qemu.options import QemuOptions
from jitterlab.targets.qemu.options import parse_options as _qemu_options
from jitterlab.targets.qemu.target import QemuTarget, machine_offers
from jitterlab.targets.ssh.options import parse_options as _ssh_options
from jitterlab.targets.ssh.target import SSHTarget


class TargetFactory(Protocol):
    def __call__(self, name: str, options: Mapping[str, object], where: str | None = None) -> Target:
        """Open target `name`; `where` names its [[target]] in messages ("campaign.toml: target[1]";
        default "target 'name'"), so that what only opening finds reads like the campaign's checks."""
        ...


TARGETS: Registry[TargetFactory] = Registry("target kind")

# kind -> check(options, where) raising UserError "<where>.<key>: what is wrong; the fix", where
# is e.g. "campaign.toml: target[1]"; campaign files are checked with it before anything connects.
# A kind without a check gets its options as they are; its factory must check them.
OptionCheck = Callable[[Mapping[str, object], str], object]
OPTION_CHECKS: dict[str, OptionCheck] = {}


def check_options(kind: str, options: Mapping[str, object], where: str) -> None:
    check = OPTION_CHECKS.get(kind)
    if check is not None:
        check(options, where)


def _local_options(options: Mapping[str, object], where: str) -> str | None:
    return workdir_only(options, where, "local")


def _local(name: str, options: Mapping[str, object], where: str | None = None) -> Target:
    return LocalTarget(name, _local_options(options, where or f"target {name!r}"))


def _ssh(name: str, options: Mapping[str, object], where: str | None = None) -> Target:
    target = SSHTarget(name, _ssh_options(options, where or f"target {name!r}", check_files=True))
    try:
        return target.connect()
    except BaseException:
        target.close()
        raise


def _qemu(name: str, options: Mapping[str, object], where: str | None = None) -> Target:
    where = where or f"target {name!r}"
    target = QemuTarget(name, _qemu_options(options, where, check_files=True), where)
    try:
        return target.boot()
    except BaseException:
        target.close()
        raise


TARGETS.add("local", "this machine", _local)
OPTION_CHECKS["local"] = _local_options
TARGETS.add(
    "ssh",
    "a machine reached with the OpenSSH client (host, port, user, key, known_hosts, ...)",
    _ssh,
)
OPTION_CHECKS["ssh"] = _ssh_options
TARGETS.add(
    "labgrid",
    "a board of a labgrid farm: place = a place on a coordinator, or env = a labgrid env file (SSH); "
    "known_hosts = a file with its host key, which labgrid itself does not check",
    lambda name, options, where=None: LabgridTarget(
        name, _labgrid_options(options, where or f"target {name!r}")),
)
OPTION_CHECKS["labgrid"] = _labgrid_options
TARGETS.add(
    "qemu",
    'a Debian kernel booted here with qemu, over SSH: machine = "pc" (this machine\'s root) or an '
    'emulated ARM board with its own root ("virt-arm64", "virt-armhf", "sabrelite"); kernel = '
    '"standard" | "rt" | "6.12" | a kernel file',
    _qemu,
)
OPTION_CHECKS["qemu"] = _qemu_options
TARGETS.add(
    "fake",
    "for jitterlab's own tests: a machine that is not there (commands succeed silently, processes are "
    "fake, on a fake clock); workdir",
    open_fake,
)
OPTION_CHECKS["fake"] = _fake_options

# kind -> the class its factory makes (what it declares: capabilities.kind_capabilities); for a kind
# that offers some of them only when configured so, what its checked options make it offer, and how a
# person configures it for a capability (None: it cannot be)
CLASSES: dict[str, type] = {"local": LocalTarget, "ssh": SSHTarget, "labgrid": LabgridTarget,
                            "qemu": QemuTarget, "fake": FakeTarget}
_CONFIGURED: dict[str, Callable[[object, type[Capability]], bool]] = {
    "ssh": SSHTarget.offered,  # type: ignore[dict-item]
    "qemu": lambda options, cap: machine_offers(options.machine, cap),  # type: ignore[attr-defined]
}


def _qemu_how(cap: type[Capability]) -> str | None:
    machines = [e.name for e in MACHINES if machine_offers(e.obj, cap)]
    return f"with machine = {_either(machines)}" if machines else None


_HOW: dict[str, Callable[[type[Capability]], str | None]] = {
    "ssh": lambda cap: 'with cc = "<cross compiler>"' if cap is CrossBuilt else "",
    "qemu": _qemu_how,
}
_FOR_TESTS = ("fake",)


def declare(name: str, kind: str, options: Mapping[str, object], where: str) -> Declared:
    """Target `name` as its [[target]] declares it (options checked: UserError naming `where`), without
    connecting: what it will offer, and for an emulated board its GPIO block."""
    check = OPTION_CHECKS.get(kind)
    checked = check(options, where) if check is not None else options
    configured = _CONFIGURED.get(kind)
    offered = frozenset(c for c in kind_capabilities(CLASSES[kind])
                        if configured is None or configured(checked, c))
    if not isinstance(checked, QemuOptions):
        return Declared(name, f'kind "{kind}"', offered, offered_by)
    machine = checked.machine
    traced = machine.traced_gpio
    return Declared(name, f'kind "{kind}", machine = "{machine.name}"', offered, offered_by,
                    gpio_soc=machine.gpio_soc, machine=machine.name, cpus=checked.cpus,
                    traced_gpio=(traced.controller, traced.lines) if traced is not None else None)


def offered_by(cap: type[Capability]) -> str:
    """The targets that offer `cap`, as a person writes them: 'kind "qemu" with machine = "virt-arm64"'."""
    kinds = []
    for kind, cls in CLASSES.items():
        if kind in _FOR_TESTS or cap not in kind_capabilities(cls):
            continue
        how = _HOW[kind](cap) if kind in _HOW else ""
        if how is not None:
            kinds.append(f'kind "{kind}" {how}'.rstrip())
    return _either(kinds, quote=False) if kinds else "none"


def _either(names: list[str], *, quote: bool = True) -> str:
    shown = [f'"{n}"' if quote else n for n in names]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
