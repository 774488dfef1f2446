"""What one run gets to work with: the target, the controller, the settings, its cell, where to
put files, the built programs and the CPUs it may use. Benchmarks, impls, pins and probes all
receive this one record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.records import Cell, RunSettings
from jitterlab.targets.base import Target


@dataclass(frozen=True)
class Placement:
    """CPUs for the program under test, the probe and the loads (None: let the scheduler decide)."""

    program_cpus: tuple[int, ...] | None
    probe_cpu: int | None
    load_cpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class RunContext:
    """Everything one run needs. `scratch` is on the target, `local_dir` on the controller.

    `controller` is the machine jitterlab runs on, as a target (the same object as `target` when
    the target is local; None where a caller has none to give): instruments plugged in here, and
    the UDP client of udp-echo when asked, run there.
    """

    target: Target
    settings: RunSettings
    cell: Cell
    repetition: int
    scratch: str
    local_dir: Path
    bindir: str
    placement: Placement
    rt_permitted: bool
    controller: Target | None = None
    # the target's sysinfo as its runs see it (RT throttling after the campaign lifted it or not,
    # container, who jitterlab is): a warning's remedy fits the machine; None where unknown
    target_info: Mapping[str, object] | None = None
