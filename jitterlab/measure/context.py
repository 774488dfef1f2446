"""What one run gets to work with: the target, the controller, the settings, its cell, where to
put files, the built programs and the CPUs it may use. Benchmarks, impls, pins and probes all
receive this one record."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from jitterlab.model.records import Cell, RunSettings
from jitterlab.model.tuning import Applied
from jitterlab.targets.base import Target


@dataclass(frozen=True)
class Placement:
    """CPUs for the program under test, the probe and the loads (None: let the scheduler decide)."""

    program_cpus: tuple[int, ...] | None
    probe_cpu: int | None
    load_cpus: tuple[int, ...] | None = None


@dataclass(frozen=True)
class Throttling:
    """The kernel's RT throttling during a target's runs: whether it was on, and how to lift it
    there (the runner's words: they know who jitterlab is there, and a container's host)."""

    active: bool
    remedy: str = ""


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
    # RT throttling as the target's runs have it (after the campaign lifted it or not): a warning's
    # remedy fits the machine; None where unknown
    throttling: Throttling | None = None
    # the tunings applied for the cell's runs (model/tuning.py): an impl starts its program through
    # their launchers and gives it their flags
    tunings: tuple[Applied, ...] = ()
    # what the run's parts read of the target once for all of them (the GPIO chips: the pin and the
    # probe of one run share one reading, a round trip less on a slow board); fresh for every run
    read_once: dict[str, object] = field(default_factory=dict, compare=False, repr=False)
