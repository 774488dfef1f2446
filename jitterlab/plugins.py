"""Every registry in one place; importing this registers the built-in plug-ins."""

from __future__ import annotations

import jitterlab.benchmarks.squarewave as _squarewave  # noqa: F401  (registers squarewave)
import jitterlab.loads as _loads  # noqa: F401  (registers the built-in loads)
from jitterlab.benchmarks.base import BENCHMARKS
from jitterlab.benchmarks.impls import IMPLS
from jitterlab.loads.base import LOADS
from jitterlab.pins import PINS
from jitterlab.probes.base import PROBES
from jitterlab.targets.registry import TARGETS

ALL = {
    "benchmarks": BENCHMARKS,
    "impls": IMPLS,
    "pins": PINS,
    "probes": PROBES,
    "loads": LOADS,
    "targets": TARGETS,
}
