"""Fixtures shared by the tests; the helpers they use are in tests/support.py."""

from __future__ import annotations

import contextlib
import signal
import sys
from pathlib import Path

import pytest

# `from tests.support import ...` wherever pytest is started from (--import-mode=importlib leaves
# sys.path alone); its asserts report like the tests' own
if str(Path(__file__).parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).parent.parent))
pytest.register_assert_rewrite("tests.support")

from tests.support import hold_to_declared, running_sshd  # noqa: E402

# A suite started as a background job of a script (`cmd &` without job control, some CI runners)
# inherits SIGINT and SIGQUIT ignored, and so would every program it starts: the tests that stop
# jitterlab, a load or a program with SIGINT, as a terminal's Ctrl-C does, would test the launcher's
# shell instead. A handler here is reset to the default in every program started (exec keeps only
# an ignored disposition), so the suite tests the same thing however it was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)


@pytest.fixture(autouse=True)
def declared_metrics_only(monkeypatch):
    """Every measurement a test makes of a registered benchmark (on recorded outputs, a fake target,
    this machine) holds only metrics the benchmark declared for its cell: `run --until-decided
    --watch` refuses every other name before measuring (tests/benchmarks/test_declared_metrics.py)."""
    found = hold_to_declared(monkeypatch)
    yield
    assert not found, f"metrics produced but not declared (Benchmark.metric_names): {sorted(set(found))}"


@pytest.fixture(autouse=True)
def private_build_cache(request, tmp_path_factory, monkeypatch):
    """Builds a test keeps (execution/build_cache.py) go to a directory of its own, not the user's
    cache; a VM test keeps the user's, where a guest's build serves the next boot as it does in use."""
    if request.node.get_closest_marker("vm") is None:
        monkeypatch.setenv("JITTERLAB_BUILD_CACHE", str(tmp_path_factory.mktemp("build-cache")))


@pytest.fixture(scope="module")
def sshd(tmp_path_factory):
    """A loopback sshd shared by a module's tests (a test that drops its server uses start_sshd)."""
    with running_sshd(tmp_path_factory.mktemp("sshd")) as server:
        yield server


@pytest.fixture
def start_sshd(tmp_path):
    """start_sshd(name): a loopback sshd of this test's own in tmp_path/name, stopped at teardown."""
    with contextlib.ExitStack() as stack:
        yield lambda name: stack.enter_context(running_sshd(tmp_path / name))


# `make test` (the tests without the `vm` marker) and `make test-vm` (those with it: they boot an
# emulator) each run two pytest-xdist workers, each taking a unit of work at a time: a file, or one
# of the units below. The emulator lane is two units of about the same length, one on each worker
# (by the files' durations in a whole-suite run on 2 CPUs, warm cache: the LAVA job 342 s, vm_pins
# 306 s, labgrid's farm 298 s, vm_tunings 205 s, the arm board 87 s, labgrid's README 81 s,
# test_qemu 46 s, the unit board 25 s). Each keeps its files' tests (and their module fixtures: one
# booted guest, one sshd) on one worker; at most one emulator file runs per worker (test_vm_pins.py
# boots its two guests at once: beside other emulators, load 13-17 on 2 CPUs, both were up in 83 s
# of their 120 s boot_timeout; labgrid boards have 240 s). The labgrid files share a unit (labgrid
# reaches places through one coordinator per process). The files that drive this machine's kernel
# tracing (one tracefs, one current tracer) are another unit, and so are those that apply tunings to
# this machine (one set of IRQ affinities, one /dev/cpu_dma_latency). The scheduler sees only test ids
# (markers stay in the workers), hence the files are named here; collection refuses a vm test in
# an unlisted file.
UNITS = {
    "emulators-guests": frozenset({  # the x86 guests (2 kernels at once in vm_pins, 6.12, the
        "tests/targets/test_vm_pins.py",  # campaign's guest) and the arm64 board (alone, and
        "tests/tunings/test_vm_tunings.py",  # beside the real-time unit)
        "tests/targets/test_qemu.py",
        "tests/targets/test_arm_board.py",
        "tests/targets/test_unit_board.py",
    }),
    "emulators-labs": frozenset({  # the LAVA qemu job (and its bundle), labgrid's boards
        "tests/lava/test_qemu_job.py",
        "tests/targets/test_labgrid_farm.py",
        "tests/targets/test_labgrid_readme.py",
        "tests/targets/test_labgrid_qemu.py",
    }),
    "kernel-tracing": frozenset({
        "tests/benchmarks/test_cyclictest.py",  # breaktrace sets the tracer and tracing_on
        "tests/benchmarks/test_rtla.py",  # timerlat, osnoise and hwlat take the tracer
        "tests/tracing/test_recording_here.py",  # the recorder's instances, tracefs mounted and unmounted
        "tests/tracing/test_attribution_here.py",  # the recorder on a disturbed program
        "tests/tracing/test_traced_run_here.py",  # traced runs beside a real-time burst
    }),
    "machine-tunings": frozenset({  # apply and restore tunings on this machine (IRQ affinity, ...):
        "tests/tunings/test_this_machine.py",  # each compares the machine's files before and after,
        "tests/tunings/test_ssh_tunings.py",  # so neither may run while the other changes them
    }),
}
EMULATOR_FILES = UNITS["emulators-guests"] | UNITS["emulators-labs"]


def _file_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def _unit_of(nodeid: str) -> str:
    path = _file_of(nodeid)
    return next((unit for unit, files in UNITS.items() if path in files), path)


def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByUnit(LoadScopeScheduling):
        """Units of work in the order collected (--no-loadscope-reorder)."""

        def _split_scope(self, nodeid: str) -> str:
            return _unit_of(nodeid)

    return ByUnit(config, log)


# The longest files after the emulators (30-60 s each, waiting on real programs, sshd, LAVA's
# dispatcher and labgrid's coordinator): started early, none is the last one a worker waits on.
LONG_FILES = (
    "tests/targets/test_labgrid.py",
    "tests/lava/test_definition.py",
    "tests/test_end_to_end.py",
    "tests/targets/test_unit_emulated.py",
    "tests/test_deploy.py",
    "tests/targets/test_ssh.py",
    "tests/test_remote_campaign.py",
)


def _start_rank(nodeid: str) -> int:
    path = _file_of(nodeid)
    if path in EMULATOR_FILES:
        return 0
    return 1 + LONG_FILES.index(path) if path in LONG_FILES else 1 + len(LONG_FILES)


def pytest_collection_modifyitems(config, items) -> None:
    """The emulator files first (the scheduler hands them out as two units, the longest), then the
    longest of the other files; the rest in the order collected."""
    unlisted = {_file_of(i.nodeid) for i in items if i.get_closest_marker("vm")} - EMULATOR_FILES
    if unlisted:
        raise pytest.UsageError(f"tests/conftest.py: no emulator unit of UNITS lists {sorted(unlisted)}, "
                                "whose tests boot an emulator (marker vm): add them to one")
    items[:] = sorted(items, key=lambda item: _start_rank(item.nodeid))
