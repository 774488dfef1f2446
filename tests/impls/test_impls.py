"""Every registered impl describes itself completely, and starts its program with the common flags."""

from __future__ import annotations

import re
import subprocess
from fnmatch import fnmatch
from pathlib import Path

import pytest

import jitterlab.programs
from jitterlab import plugins
from jitterlab.execution.deploy import PROGRAMS_DIR
from jitterlab.measure.context import Placement, RunContext
from jitterlab.measure.squarewave.bindings import pins_driven_by
from jitterlab.measure.squarewave.impls.base import PROGRAM_PRIORITY
from jitterlab.measure.squarewave.impls.userspace import ProgramImpl
from jitterlab.measure.squarewave.pins.base import PinHandle
from jitterlab.measure.squarewave.pins.offers import ChipLine, KernelLine, MappedLevel, Offer, ValueFile
from jitterlab.model.errors import RunFailed
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.records import RunSettings
from jitterlab.model.tuning import Applied, Cpus
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.processes import LAUNCH

MAKE_TARGETS = set(re.findall(r"[\w-]+", " ".join(
    re.findall(r"^(?:UDP_)?PROGRAMS \+?= (.*)$", (PROGRAMS_DIR / "c" / "Makefile").read_text(), re.M))))
IMPLS = [e.name for e in plugins.IMPLS]
# the kernel-module impls are tested in tests/impls/test_kmod.py
PROGRAM_IMPLS = [e.name for e in plugins.IMPLS if isinstance(e.obj, ProgramImpl)]


@pytest.mark.parametrize("name", IMPLS)
def test_an_impl_names_what_it_needs(name):
    impl = plugins.IMPLS.get(name, "test")
    assert impl.needs and all(issubclass(form, Offer) for form in impl.needs)
    assert pins_driven_by(name), "no registered pin offers what it needs"
    assert set(impl.programs()) <= MAKE_TARGETS, "a program the Makefile does not build"
    assert all(isinstance(p, str) for p in impl.tools().values())


@pytest.mark.parametrize("name", PROGRAM_IMPLS)
def test_an_impl_runs_its_program_with_the_common_flags(name, tmp_path):
    impl = plugins.IMPLS.get(name, "test")
    target = FakeTarget(workdir=str(tmp_path))
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=0.1, log="done\n"))
    target.respond(["cat"], "done\n")
    pin = PinHandle("any", (ValueFile("/dev/shm/p"), MappedLevel("/dev/shm/p"),
                            ChipLine("/dev/gpiochip0", 17), KernelLine("chip0", 17)))
    form = pin.bind(impl.needs)
    assert form is not None and form is pin.get(impl.needs[0]), "the impl's first choice of form"
    ctx = RunContext(target, RunSettings(duration_ns=10**9), squarewave_cell(name, 2_000_000), 0,
                     "/s", tmp_path, "/b", Placement((0,), 1), rt_permitted=False)
    assert impl.run(ctx, pin) == "done"
    [argv] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    argv = list(argv[argv.index("env") + 2:])
    assert argv[:3] == ["taskset", "-c", "0"]
    flags = argv[argv.index("--period-ns"):]
    assert flags[:4] == ["--period-ns", "2000000", "--duration-ns", "1000000000"]
    assert flags[4:4 + len(form.program_args)] == list(form.program_args) and "--log" in flags
    assert flags[flags.index("--prio") + 1] == str(PROGRAM_PRIORITY)
    assert ("--allow-no-rt" in flags) == impl.realtime  # RT not permitted here
    program = next(a for a in argv[3:] if a.startswith("/b/"))
    assert Path(PROGRAMS_DIR / program.removeprefix("/b/")).exists() or program.removeprefix("/b/c/") in (
        MAKE_TARGETS)


@pytest.mark.parametrize("name", PROGRAM_IMPLS)
def test_an_impls_program_is_in_a_directory_that_is_deployed(name):
    """Deployment ships what is declared: a program outside every declared directory never arrives."""
    directory, _, program = plugins.IMPLS.get(name, "test").command[-1].partition("/")
    declared = jitterlab.programs.DIRS[directory]
    shipped = (PROGRAMS_DIR / directory / program).is_file() and any(
        fnmatch(program, pattern) for pattern in declared.ships)
    built = declared.built and program in MAKE_TARGETS
    assert shipped or built, f"{name}: {directory}/{program} never arrives"


def test_a_failing_program_fails_the_run_with_its_last_line(tmp_path):
    target = FakeTarget(workdir=str(tmp_path))
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(rc=2, duration_s=0.1,
                                                      log="starting\nc-fifo: SCHED_FIFO refused\n"))
    ctx = RunContext(target, RunSettings(), squarewave_cell("c-fifo"), 0, str(tmp_path / "s"), tmp_path, "/b",
                     Placement(None, None), rt_permitted=True)
    with pytest.raises(RunFailed, match=r"^c-fifo exited with status 2: c-fifo: SCHED_FIFO refused$"):
        plugins.IMPLS.get("c-fifo", "test").run(ctx, PinHandle("vpin", (MappedLevel("/p"),)))


@pytest.mark.parametrize("name", PROGRAM_IMPLS)
def test_the_tunings_reach_an_impls_program_through_their_launcher_and_flags(name, tmp_path):
    """Before the program's CPU pinning: the launchers, each exec'ing the next (the isolated
    partition's CPUs may be pinned to only from inside it); after its common flags: the flags the
    tunings ask of it."""
    impl = plugins.IMPLS.get(name, "test")
    target = FakeTarget(workdir=str(tmp_path))
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=0.1, log="done\n"))
    target.respond(["cat"], "done\n")
    cpus = Cpus((0,), (1,))
    tunings = (Applied("isolated", cpus, launcher=("sh", "-c", "join", "j", "/cg/cgroup.procs")),
               Applied("timer-slack", cpus, launcher=("sh", "-c", "slack", "s", "1", "/proc/self/x")),
               Applied("mlock", cpus, flags=("--mlock",)))
    ctx = RunContext(target, RunSettings(duration_ns=10**9), squarewave_cell(name, 2_000_000), 0, "/s",
                     tmp_path, "/b", Placement((0,), 1), rt_permitted=True, tunings=tunings)
    impl.run(ctx, PinHandle("any", (ValueFile("/dev/shm/p"), MappedLevel("/dev/shm/p"),
                                    ChipLine("/dev/gpiochip0", 17))))
    [argv] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    argv = list(argv[argv.index("env") + 2:])
    assert argv[:13] == ["sh", "-c", "join", "j", "/cg/cgroup.procs", "sh", "-c", "slack", "s", "1",
                         "/proc/self/x", "taskset", "-c"]
    unset = ["env", *(w for n in impl.unset for w in ("-u", n))] if impl.unset else []
    assert argv[13] == "0" and argv[14:14 + len(unset)] == unset
    assert argv[14 + len(unset):][:len(impl.command) - 1] == list(impl.command[:-1])
    assert argv[-1] == "--mlock" and argv.count("--mlock") == 1
    assert impl.program is not None and impl.program.realtime == impl.realtime


@pytest.mark.parametrize(("name", "said", "runs"), [
    ("python", "/opt/py/3.11/bin/python3\n", "/opt/py/3.11/bin/python3"),  # a shim asked once, then skipped
    ("python", "", "python3"),  # an interpreter that does not say: started by its name
    ("node", "/usr/bin/node\n", "/usr/bin/node"),
])
def test_an_interpreter_is_asked_once_per_target_which_executable_it_runs(name, said, runs, tmp_path):
    impl = plugins.IMPLS.get(name, "test")
    target = FakeTarget(workdir=str(tmp_path))
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=0.01, log="done\n"))
    unset = ["env", *(w for n in impl.unset for w in ("-u", n))] if impl.unset else []
    target.respond([*unset, impl.command[0], *impl.resolve], said, rc=0 if said else 1)
    ctx = RunContext(target, RunSettings(duration_ns=10**9), squarewave_cell(name, 2_000_000), 0,
                     str(tmp_path / "s"), tmp_path, "/b", Placement((0,), 1), rt_permitted=False)
    for _ in range(2):
        impl.run(ctx, PinHandle("vpin", (ValueFile("/dev/shm/p"),)))
    asked = [c for c in target.calls if c[len(unset)] == impl.command[0] and list(c[:len(unset)]) == unset]
    started = [c[c.index("env") + 5 + (1 + 2 * len(impl.unset) if impl.unset else 0)]
               for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    assert len(asked) == 1 and started == [runs, runs]


def test_node_starts_without_the_certificates_it_would_parse_for_nothing(tmp_path, monkeypatch):
    """NODE_EXTRA_CA_CERTS makes node read and parse every certificate it names before the program's
    first line (80-160 ms here); the square wave opens no TLS connection: the program starts without
    it, and everything else of the environment is left as it is."""
    certs = tmp_path / "ca.pem"
    certs.write_text("not read by the program\n")
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", str(certs))
    monkeypatch.setenv("JITTERLAB_KEPT", "yes")
    impl = plugins.IMPLS.get("node", "test")
    assert isinstance(impl, ProgramImpl) and impl.unset == ("NODE_EXTRA_CA_CERTS",)
    target = FakeTarget(workdir=str(tmp_path))
    target.behave(["sh", "-c", LAUNCH], FakeBehaviour(duration_s=0.01, log="done\n"))
    ctx = RunContext(target, RunSettings(duration_ns=10**9), squarewave_cell("node", 2_000_000), 0,
                     str(tmp_path / "s"), tmp_path, "/b", Placement((0,), 1), rt_permitted=False)
    impl.run(ctx, PinHandle("vpin", (ValueFile("/dev/shm/p"),)))
    [argv] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    env = subprocess.run([*argv[argv.index("taskset") + 3:argv.index("node")], "env"], capture_output=True,
                         text=True, check=True).stdout.splitlines()
    assert "JITTERLAB_KEPT=yes" in env and not [v for v in env if v.startswith("NODE_EXTRA_CA_CERTS=")]
