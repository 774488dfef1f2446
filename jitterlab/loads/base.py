"""What every load does: start on a target, prove it runs, stop, say what it achieved."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

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


@dataclass(frozen=True)
class LoadSpec:
    """A registered load: a factory and the tools it needs on the target (tool -> Debian package)."""

    factory: type
    tools: dict[str, str]


LOADS: Registry[LoadSpec] = Registry("load")
