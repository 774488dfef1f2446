"""Target kinds users can name in [[target]] kind = ..., and the checks of their options."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from jitterlab.model.registry import Registry
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import Capability, CrossBuilt, Declared, kind_capabilities
from jitterlab.targets.fake import FakeTarget, open_fake
from jitterlab.targets.fake import parse_options as _fake_options
from jitterlab.targets.labgrid.options import OPTIONS as LABGRID_OPTIONS
from jitterlab.targets.labgrid.target import LabgridTarget
from jitterlab.targets.labgrid.target import parse_options as _labgrid_options
from jitterlab.targets.local import LocalTarget, workdir_only
from jitterlab.targets.qemu.machines.registry import DEFAULT, MACHINES
from jitterlab.targets.qemu.options import QemuOptions
from jitterlab.targets.qemu.options import option_help as qemu_option_help
from jitterlab.targets.qemu.options import parse_options as _qemu_options
from jitterlab.targets.qemu.target import QemuTarget, profile_offers
from jitterlab.targets.ssh.options import OPTIONS as SSH_OPTIONS
from jitterlab.targets.ssh.options import parse_options as _ssh_options
from jitterlab.targets.ssh.target import SSHTarget
from jitterlab.targets.unit import target as unit


class TargetFactory(Protocol):
    def __call__(self, name: str, options: Mapping[str, object], where: str | None = None) -> Target:
        """Open target `name`; `where` names its [[target]] in messages ("campaign.toml: target[1]";
        default "target 'name'"), so that what only opening finds reads like the campaign's checks."""
        ...


# kind -> check(options, where) raising UserError "<where>.<key>: what is wrong; the fix", where
# is e.g. "campaign.toml: target[1]"; campaign files are checked with it before anything connects.
OptionCheck = Callable[[Mapping[str, object], str], object]


@dataclass(frozen=True)
class Kind:
    """What the framework knows of a target kind besides its factory (the entry in TARGETS)."""

    cls: type  # what its factory makes: what it declares (capabilities.kind_capabilities)
    check: OptionCheck  # its checked options, or UserError; needs no connection
    options: Callable[[], Mapping[str, str]]  # its [[target]] keys, one line of help each (read when shown)
    # for a kind that offers some capabilities only when configured so: what its checked options make
    # it offer, and how a person configures it for a capability (None: it cannot be)
    configured: Callable[[object, type[Capability]], bool] | None = None
    how: Callable[[type[Capability]], str | None] | None = None


TARGETS: Registry[TargetFactory] = Registry("target kind")
KINDS: dict[str, Kind] = {}


def add_kind(name: str, help: str, factory: TargetFactory, kind: Kind, *, listed: bool = True) -> None:
    """Register a target kind; `listed=False` keeps one for jitterlab's own tests out of what users see."""
    TARGETS.add(name, help, factory, listed=listed)
    KINDS[name] = kind


def check_options(kind: str, options: Mapping[str, object], where: str) -> None:
    """The options of a [[target]] of `kind`: its `unit` table (a real-time unit beside its Linux,
    targets/unit/), then the kind's own."""
    unit.check(kind, KINDS[kind].check)(options, where)


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


def _qemu(name: str, options: Mapping[str, object], where: str | None = None,
          devices: tuple[str, ...] = ()) -> Target:
    where = where or f"target {name!r}"
    target = QemuTarget(name, _qemu_options(options, where, check_files=True), where, devices=devices)
    try:
        return target.boot()
    except BaseException:
        target.close()
        raise


def _qemu_how(cap: type[Capability]) -> str | None:
    machines = [e.name for e in MACHINES if profile_offers(e.obj, cap)]
    return f"with machine = {_either(machines)}" if machines else None


_LOCAL_OPTIONS = {"workdir": "absolute directory for jitterlab's files (default: $XDG_RUNTIME_DIR/jitterlab, "
                             "else /tmp/jitterlab-<uid>)"}
_FAKE_OPTIONS = {"workdir": "absolute directory for jitterlab's files (default: a new temporary directory)"}

add_kind("local", "this machine", unit.opener("local", _local),
         Kind(LocalTarget, _local_options, unit.with_option(lambda: _LOCAL_OPTIONS)))
add_kind(
    "ssh",
    "a machine reached with the OpenSSH client (host, port, user, key, known_hosts, ...)",
    unit.opener("ssh", _ssh),
    Kind(SSHTarget, _ssh_options, unit.with_option(lambda: SSH_OPTIONS),
         configured=SSHTarget.offered,  # type: ignore[arg-type]
         how=lambda cap: 'with cc = "<cross compiler>"' if cap is CrossBuilt else ""),
)
add_kind(
    "labgrid",
    "a board of a labgrid farm: place = a place on a coordinator, or env = a labgrid env file (SSH); "
    "known_hosts = a file with its host key, which labgrid itself does not check",
    unit.opener("labgrid", lambda name, options, where=None: LabgridTarget(
        name, _labgrid_options(options, where or f"target {name!r}"))),
    Kind(LabgridTarget, _labgrid_options, unit.with_option(lambda: LABGRID_OPTIONS)),
)
add_kind(
    "qemu",
    f'a Debian kernel booted here with qemu, over SSH: machine = one of the qemu machines ("{DEFAULT}", '
    "the default, runs this machine's root; an emulated board runs its own); kernel = "
    '"standard" | "rt" | "6.12" | a kernel file',
    unit.opener("qemu", _qemu),
    Kind(QemuTarget, _qemu_options, unit.with_option(qemu_option_help),
         configured=lambda options, cap: profile_offers(options.profile, cap),  # type: ignore[attr-defined]
         how=_qemu_how),
)
add_kind(
    "fake",
    "for jitterlab's own tests: a machine that is not there (commands succeed silently, processes are "
    "fake, on a fake clock); workdir",
    open_fake,
    Kind(FakeTarget, _fake_options, lambda: _FAKE_OPTIONS),
    listed=False,
)


def declare(name: str, kind: str, options: Mapping[str, object], where: str) -> Declared:
    """Target `name` as its [[target]] declares it (options checked: UserError naming `where`), without
    connecting: what it will offer, and for an emulated board its GPIO block."""
    known = KINDS[kind]
    spec = unit.declared(kind, options, where)  # a real-time unit beside it, from its unit table
    checked = known.check(unit.without(options), where)
    offered = frozenset(c for c in kind_capabilities(known.cls)
                        if known.configured is None or known.configured(checked, c))
    offered |= unit.capabilities(spec)
    if not isinstance(checked, QemuOptions):
        return Declared(name, f'kind "{kind}"', offered, offered_by, unit=spec)
    return Declared(name, f'kind "{kind}", machine = "{checked.profile.name}"', offered, offered_by,
                    emulated=checked.declared(), unit=spec)


def offered_by(cap: type[Capability]) -> str:
    """The targets that offer `cap`, as a person writes them: 'kind "qemu" with machine = "virt-arm64"'."""
    kinds = []
    listed = TARGETS.names()  # never a kind for tests
    for name, kind in KINDS.items():
        if name not in listed or cap not in kind_capabilities(kind.cls):
            continue
        how = kind.how(cap) if kind.how is not None else ""
        if how is not None:
            kinds.append(f'kind "{name}" {how}'.rstrip())
    return _either(kinds, quote=False) if kinds else "none"


def _either(names: list[str], *, quote: bool = True) -> str:
    shown = [f'"{n}"' if quote else n for n in names]
    return shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} or {shown[-1]}"
