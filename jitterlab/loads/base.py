"""What every load does: start on a target, prove it runs, stop, say what it achieved."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from jitterlab.errors import UserError
from jitterlab.records import Metric
from jitterlab.registry import Registry
from jitterlab.targets.base import Target


@dataclass(frozen=True)
class LoadContext:
    """Where and how a load runs for one run.

    `scratch` is a directory on the target private to this run (logs, temp files);
    `cpus` is the CPU set the load may use (None: all CPUs).
    """

    target: Target
    scratch: str
    cpus: tuple[int, ...] | None = None
    options: dict[str, object] = field(default_factory=dict)


class Load(Protocol):
    """One disturbance beside the benchmark. Instances live for one run."""

    def start(self, ctx: LoadContext) -> None:
        """Start the load; raise RunFailed if it cannot start."""
        ...

    def check(self) -> None:
        """Raise RunFailed if the load is not (or no longer) running and producing."""
        ...

    def stop(self) -> list[Metric]:
        """Stop everything the load started; return what it achieved (`load_*` metrics)."""
        ...


def no_options(options: dict, where: str) -> dict:
    """The validator of a load that takes no options."""
    for key in options:
        raise UserError(f"{where}: this load takes no options, got {key!r}; remove it")
    return {}


@dataclass(frozen=True)
class LoadSpec:
    """A registered load: a factory, the tools it needs on the target (tool -> Debian package),
    and `validate(options, where) -> options with defaults`, raising UserError naming `where`."""

    factory: type
    tools: dict[str, str]
    validate: Callable[[dict, str], dict] = no_options


LOADS: Registry[LoadSpec] = Registry("load")
