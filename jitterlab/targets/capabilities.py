"""What a target can do beyond the Target protocol, one small class per capability.

A target kind declares a capability by inheriting its class (nominal, like labgrid's protocols);
code asks with `has(target, Cap)` or `need(target, Cap, why)` and never looks for attributes. A
wrapper around a target (a farm's board) passes on what it wraps with `capabilities_of`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path
from typing import TypeVar

from jitterlab.model.errors import UserError


class Capability(ABC):  # noqa: B024  (a marker: most capabilities add methods, some none)
    """A capability; `does` completes "this target cannot ..." in errors."""

    does: str = ""

    def offers(self, cap: type[Capability]) -> bool:
        """False where a kind has `cap` only when configured so (an ssh target without `cc`)."""
        return True


class ControllerMachine(Capability):
    """The target is the machine jitterlab runs on: instruments and clients run on it too."""

    does = "run on the controller itself (it is another machine)"


class CrossBuilt(Capability):
    """Programs for this target are built on the controller and sent ready to run."""

    does = "have its programs built on the controller (no cross compiler is set)"

    @property
    @abstractmethod
    def cross_cc(self) -> str:
        """The C compiler (argv word) that builds for the target on the controller."""


class KeepsKernelModules(Capability):
    """The target keeps kernel modules built for its kernel between boots (a VM jitterlab boots)."""

    does = "keep kernel modules it built between boots"

    @abstractmethod
    def kernel_module(self, sources: Path, name: str) -> str:
        """Path on the target of module `name` built from `sources` for its running kernel."""


class WaitsForPath(Capability):
    """The target can wait for a file to appear without one round trip per look."""

    does = "wait for a file to appear"

    @abstractmethod
    def wait_for_path(self, path: str, timeout_s: float) -> bool:
        """True once `path` exists on the target, False after timeout_s."""


class VirtualMachine(Capability):
    """A VM jitterlab booted: how its CPU is provided and how long it took to come up."""

    does = "report a VM's accelerator and boot time (it is not a VM jitterlab booted)"

    @property
    @abstractmethod
    def vm_accel(self) -> str:
        """"kvm" (hardware virtualization) or "tcg" (emulation: functional evidence only)."""

    @property
    @abstractmethod
    def boot_s(self) -> float | None:
        """Wall time from starting the VM to the target answering, s."""


class ReachedBySSH(Capability):
    """The target is reached with the OpenSSH client; others may open connections of their own."""

    does = "be reached with ssh (use an ssh, labgrid or qemu target)"

    @abstractmethod
    def ssh_command(self, remote: list[str]) -> list[str]:
        """argv that runs `remote` on the target through ssh (its options and host)."""


class HostKeyStatus(Capability):
    """The target knows whether its host key was checked against a known one."""

    does = "tell whether its host key was verified"

    @property
    @abstractmethod
    def host_key_verified(self) -> bool:
        """False when the connection was made without checking the host key."""


C = TypeVar("C", bound=Capability)


def has(target: object, cap: type[C]) -> C | None:
    """The target as `cap` when it has that capability, else None."""
    found = capabilities_of(target).get(cap) or (target if isinstance(target, cap) else None)
    if found is None or not found.offers(cap):  # type: ignore[attr-defined]
        return None
    return found  # type: ignore[return-value]


def need(target: object, cap: type[C], why: str) -> C:
    """The target as `cap`; UserError "target NAME cannot ...: why" when it lacks it."""
    found = has(target, cap)
    if found is None:
        raise UserError(f"target {target.name!r} cannot {cap.does}: {why}")  # type: ignore[attr-defined]
    return found


class Wrapper:
    """Base of a target that wraps another (a farm's board): it has what the inner target has."""

    def __init__(self, inner: object) -> None:
        self._inner = inner

    @property
    def inner(self) -> object:
        return self._inner


def capabilities_of(target: object) -> dict[type, object]:
    """Capabilities reached through wrappers: {Capability class: the object that has it}."""
    found: dict[type, object] = {}
    seen = target
    while isinstance(seen, Wrapper):
        seen = seen.inner
        for cls in type(seen).__mro__:
            if isinstance(cls, type) and issubclass(cls, Capability) and cls is not Capability:
                found.setdefault(cls, seen)
    return found

