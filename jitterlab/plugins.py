"""Every registry in one place; importing this registers the built-in plug-ins.

Adding a plug-in is one new module that registers itself, plus its import here (see
docs/architecture.md).
"""

from __future__ import annotations

import jitterlab.benchmarks.boot as _boot  # noqa: F401  (registers boot)
import jitterlab.benchmarks.command as _command  # noqa: F401  (registers command)
import jitterlab.benchmarks.crypto as _crypto  # noqa: F401  (registers crypto)
import jitterlab.benchmarks.cyclictest as _cyclictest  # noqa: F401  (registers cyclictest)
import jitterlab.benchmarks.disk as _disk  # noqa: F401  (registers disk)
import jitterlab.benchmarks.hwlat as _hwlat  # noqa: F401  (registers hwlat)
import jitterlab.benchmarks.ipc as _ipc  # noqa: F401  (registers ipc-latency)
import jitterlab.benchmarks.iperf3 as _iperf3  # noqa: F401  (registers iperf3)
import jitterlab.benchmarks.membw as _membw  # noqa: F401  (registers membw)
import jitterlab.benchmarks.pps as _pps  # noqa: F401  (registers pps)
import jitterlab.benchmarks.rtla as _rtla  # noqa: F401  (registers timerlat, osnoise)
import jitterlab.benchmarks.squarewave as _squarewave  # noqa: F401  (registers squarewave)
import jitterlab.benchmarks.switch as _switch  # noqa: F401  (registers switch)
import jitterlab.benchmarks.sysbench as _sysbench  # noqa: F401  (registers sysbench-cpu)
import jitterlab.benchmarks.tmpfs as _tmpfs  # noqa: F401  (registers tmpfs-write)
import jitterlab.benchmarks.transfer as _transfer  # noqa: F401  (registers ssh-transfer)
import jitterlab.benchmarks.udp_echo as _udp_echo  # noqa: F401  (registers udp-echo)
import jitterlab.impls.kmod as _kmod  # noqa: F401  (registers kmod-busy, kmod-hrtimer, kmod-rt)
import jitterlab.impls.userspace as _userspace  # noqa: F401  (registers bash ... c-fifo)
import jitterlab.loads as _loads  # noqa: F401  (registers the built-in loads)
import jitterlab.pins.external as _external_pin  # noqa: F401  (registers pin external)
import jitterlab.pins.gpiod as _gpiod_pin  # noqa: F401  (registers pin gpiod)
import jitterlab.pins.gpiomem as _gpiomem_pin  # noqa: F401  (registers pin gpiomem)
import jitterlab.pins.sysfs as _sysfs_pin  # noqa: F401  (registers pin sysfs)
import jitterlab.pins.vpin as _vpin_pin  # noqa: F401  (registers pin vpin)
import jitterlab.probes.gpio_loopback as _loopback  # noqa: F401  (registers probe gpio-loopback)
import jitterlab.probes.scpi as _scpi_probe  # noqa: F401  (registers probe scpi)
import jitterlab.probes.self as _self_probe  # noqa: F401  (registers probe self)
import jitterlab.probes.sigrok as _sigrok_probe  # noqa: F401  (registers probe sigrok)
import jitterlab.probes.vpin as _vpin_probe  # noqa: F401  (registers probe vpin)
from jitterlab.benchmarks.base import BENCHMARKS
from jitterlab.impls.base import IMPLS
from jitterlab.loads.base import LOADS
from jitterlab.pins.base import PINS
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
