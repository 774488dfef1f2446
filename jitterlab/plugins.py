"""Every registry in one place; importing this registers the built-in plug-ins.

Adding a plug-in is one new module that registers itself, plus its import here (see
docs/architecture.md). Beside the registry of benchmarks, the small protocols of a benchmark its
callers are typed against (Cells, Checks, Needs, Results, Scheduling), for layers that may not
import measure/ (campaign/).
"""

from __future__ import annotations

import jitterlab.measure.benchmarks.boot as _boot  # noqa: F401  (registers boot)
import jitterlab.measure.benchmarks.command as _command  # noqa: F401  (registers command)
import jitterlab.measure.benchmarks.crypto as _crypto  # noqa: F401  (registers crypto)
import jitterlab.measure.benchmarks.cyclictest as _cyclictest  # noqa: F401  (registers cyclictest)
import jitterlab.measure.benchmarks.disk as _disk  # noqa: F401  (registers disk)
import jitterlab.measure.benchmarks.hwlat as _hwlat  # noqa: F401  (registers hwlat)
import jitterlab.measure.benchmarks.ipc as _ipc  # noqa: F401  (registers ipc-latency)
import jitterlab.measure.benchmarks.iperf3 as _iperf3  # noqa: F401  (registers iperf3)
import jitterlab.measure.benchmarks.membw as _membw  # noqa: F401  (registers membw)
import jitterlab.measure.benchmarks.pps as _pps  # noqa: F401  (registers pps)
import jitterlab.measure.benchmarks.rtla as _rtla  # noqa: F401  (registers timerlat, osnoise)
import jitterlab.measure.benchmarks.squarewave as _squarewave  # noqa: F401  (registers squarewave)
import jitterlab.measure.benchmarks.switch as _switch  # noqa: F401  (registers switch)
import jitterlab.measure.benchmarks.sysbench as _sysbench  # noqa: F401  (registers sysbench-cpu)
import jitterlab.measure.benchmarks.tmpfs as _tmpfs  # noqa: F401  (registers tmpfs-write)
import jitterlab.measure.benchmarks.transfer as _transfer  # noqa: F401  (registers ssh-transfer)
import jitterlab.measure.benchmarks.udp_echo as _udp_echo  # noqa: F401  (registers udp-echo)
import jitterlab.measure.loads as _loads  # noqa: F401  (registers the built-in loads)
import jitterlab.measure.squarewave.impls.kmod as _kmod  # noqa: F401  (registers kmod-busy, kmod-hrtimer, kmod-rt)
import jitterlab.measure.squarewave.impls.unit as _unit  # noqa: F401  (registers unit)
import jitterlab.measure.squarewave.impls.userspace as _userspace  # noqa: F401  (registers bash ... c-fifo)
import jitterlab.measure.squarewave.pins.external as _external_pin  # noqa: F401  (registers pin external)
import jitterlab.measure.squarewave.pins.gpiod as _gpiod_pin  # noqa: F401  (registers pin gpiod)
import jitterlab.measure.squarewave.pins.gpiomem as _gpiomem_pin  # noqa: F401  (registers pin gpiomem)
import jitterlab.measure.squarewave.pins.sysfs as _sysfs_pin  # noqa: F401  (registers pin sysfs)
import jitterlab.measure.squarewave.pins.unit as _unit_pin  # noqa: F401  (registers pin unit)
import jitterlab.measure.squarewave.pins.vpin as _vpin_pin  # noqa: F401  (registers pin vpin)
import jitterlab.measure.squarewave.probes.emulator as _emulator_probe  # noqa: F401  (registers probe emulator)
import jitterlab.measure.squarewave.probes.gpio_loopback as _loopback  # noqa: F401  (registers probe gpio-loopback)
import jitterlab.measure.squarewave.probes.register_poll as _register_poll  # noqa: F401  (registers probe register-poll)
import jitterlab.measure.squarewave.probes.scpi as _scpi_probe  # noqa: F401  (registers probe scpi)
import jitterlab.measure.squarewave.probes.self as _self_probe  # noqa: F401  (registers probe self)
import jitterlab.measure.squarewave.probes.sigrok as _sigrok_probe  # noqa: F401  (registers probe sigrok)
import jitterlab.measure.squarewave.probes.vpin as _vpin_probe  # noqa: F401  (registers probe vpin)
import jitterlab.tunings as _tunings  # noqa: F401  (registers none, irq-away, cpu-dma-latency ...)
from jitterlab.measure.benchmarks.base import BENCHMARKS, Cells, Checks, Needs, Results, Scheduling  # noqa: F401
from jitterlab.measure.loads.base import LOADS
from jitterlab.measure.squarewave.impls.base import IMPLS
from jitterlab.measure.squarewave.pins.base import PINS
from jitterlab.measure.squarewave.probes.base import PROBES
from jitterlab.model.traits import UNKNOWN, UNKNOWN_OBSERVER, BenchmarkTraits, ObserverTraits
from jitterlab.targets.qemu.machines.registry import MACHINES
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.unit import PROFILES as UNITS
from jitterlab.tunings.base import TUNINGS

ALL = {
    "benchmarks": BENCHMARKS,
    "impls": IMPLS,
    "pins": PINS,
    "probes": PROBES,
    "loads": LOADS,
    "tunings": TUNINGS,
    "targets": TARGETS,
    "qemu machines": MACHINES,
    "units": UNITS,
}


def traits(benchmark: str) -> BenchmarkTraits:
    """What a benchmark's runs are (model.traits): its own declaration, or UNKNOWN for a benchmark
    no longer registered (runs of an old store)."""
    return BENCHMARKS.get(benchmark, "benchmark").traits if benchmark in BENCHMARKS else UNKNOWN


def observer(probe: str) -> ObserverTraits:
    """What an observer of a square wave is (model.traits): as its probe declares it, or
    UNKNOWN_OBSERVER for a probe no longer registered (runs of an old store)."""
    if probe not in PROBES:
        return UNKNOWN_OBSERVER
    declared = PROBES.get(probe, "probe")
    return ObserverTraits(declared.independent, declared.location)
