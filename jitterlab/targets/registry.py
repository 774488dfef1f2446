"""Target kinds users can name in [[target]] kind = ..."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from jitterlab.errors import UserError
from jitterlab.registry import Registry
from jitterlab.targets.base import Target
from jitterlab.targets.local import LocalTarget

TargetFactory = Callable[[str, Mapping[str, object]], Target]
TARGETS: Registry[TargetFactory] = Registry("target kind")


def _local(name: str, options: Mapping[str, object]) -> Target:
    workdir = options.get("workdir")
    if workdir is not None and not (isinstance(workdir, str) and workdir.startswith("/")):
        raise UserError(f"target {name!r}: workdir must be an absolute path, got {workdir!r}")
    return LocalTarget(name, workdir)


TARGETS.add("local", "this machine", _local)
