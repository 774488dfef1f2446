"""The memory, net, disk and sched loads: options, achieved intensity, failure, and cleanup."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import time
from pathlib import Path

import pytest

import jitterlab.measure.loads  # noqa: F401  (registers the built-in loads)
from jitterlab.measure.loads import disk, memory, net, sched
from jitterlab.measure.loads.base import LOADS, LoadContext, lifetime_s
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.processes import MARKER_VAR, remove_records

FAST_OPTIONS = {
    "memory": {"workers": 1, "bytes": "8M"},
    "net": {"port": 15231, "packet_size": 1000},
    "disk": {"size": "8M"},
    "sched": {"groups": 2, "fds": 5, "loops": 50},
}
UNITS = {
    "memory": ("load_bogo_ops_per_s", "bogo-ops/s"),
    "net": ("load_net_mbit_per_s", "Mbit/s"),
    "disk": ("load_disk_mb_per_s", "MB/s"),
    "sched": ("load_sched_messages_per_s", "messages/s"),
}
TOOL = {"memory": "stress-ng", "net": "iperf3", "disk": "fio", "sched": "hackbench"}


def needs(tool: str):
    return pytest.mark.skipif(shutil.which(tool) is None, reason=f"no {tool}")


def live_pids_of(pgids: set[int], markers: set[str]) -> list[int]:
    """Live (non-zombie) processes in one of these groups or carrying one of these markers."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            tail = Path(f"/proc/{name}/stat").read_text().rpartition(")")[2].split()
            environ = Path(f"/proc/{name}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if tail[0] in ("Z", "X"):
            continue
        marked = any(f"{MARKER_VAR}={m}".encode() in environ for m in markers)
        if int(tail[1 + 1]) in pgids or marked:
            found.append(int(name))
    return found


def started(target: LocalTarget) -> tuple[set[int], set[str]]:
    """Process groups and markers of everything the target spawned and still tracks."""
    pgids, markers = set(), set()
    for proc in list(target._live):
        pgids.add(proc.pid)
        markers.add(proc.argv[proc.argv.index("env") + 1].split("=", 1)[1])
    return pgids, markers


def laid_out(directory: Path, size_bytes: int, timeout_s: float = 120) -> None:
    """Return once fio's files under `directory` have their full size."""
    deadline = time.monotonic() + timeout_s
    while sum(f.stat().st_size for f in directory.glob("*") if f.is_file()) < size_bytes:
        assert time.monotonic() < deadline, f"fio did not lay out {size_bytes} bytes in {timeout_s:g} s"
        time.sleep(0.05)


def start(name: str, tmp_path: Path, **ctx) -> tuple[object, LocalTarget]:
    target = LocalTarget(workdir=str(tmp_path / "work"))
    load = LOADS.get(name, "test").factory()
    options = {**FAST_OPTIONS[name], **ctx.pop("options", {})}
    load.start(LoadContext(target, str(tmp_path / "scratch"), options=options,
                           max_duration_s=60, **ctx))
    return load, target


# --- registry and options ------------------------------------------------------------------------


def test_registry_maps_every_load_to_its_debian_package():
    assert {"memory", "net", "disk", "sched"} <= set(LOADS.names())
    assert LOADS.get("memory", "t").tools == {"stress-ng": "stress-ng"}
    assert LOADS.get("net", "t").tools == {"iperf3": "iperf3"}
    assert LOADS.get("disk", "t").tools == {"fio": "fio"}
    assert LOADS.get("sched", "t").tools == {"hackbench": "rt-tests"}
    assert LOADS.get("net", "t").preflight is net.preflight


def test_defaults_and_sizes():
    assert memory.validate_options({}, "w") == {"workers": "auto", "bytes": 64 << 20}
    assert memory.validate_options({"bytes": 4096}, "w")["bytes"] == 4096
    assert memory.validate_options({"bytes": "512KiB"}, "w")["bytes"] == 512 << 10
    assert net.validate_options({}, "w") == {
        "peer": "127.0.0.1", "port": 15201, "bitrate": 0, "packet_size": 1200}
    assert net.validate_options({"bitrate": "100M"}, "w")["bitrate"] == 100_000_000
    assert disk.validate_options({"size": "1G"}, "w")["size"] == 1 << 30
    assert sched.validate_options({}, "w")["loops"] == 50
    assert lifetime_s(LoadContext(None, "/s")) == 3600
    assert lifetime_s(LoadContext(None, "/s", max_duration_s=2.2)) == 3


@pytest.mark.parametrize(
    ("validate", "options", "key", "expected"),
    [
        (memory.validate_options, {"byte": "1M"}, "byte", "unknown option of load 'memory'; "
                                                          "did you mean 'bytes'?"),
        (memory.validate_options, {"workers": 0}, "workers", "0 is out of range"),
        (memory.validate_options, {"bytes": -1}, "bytes", "cannot read size -1"),
        (memory.validate_options, {"bytes": "-64M"}, "bytes", "cannot read size"),
        (memory.validate_options, {"bytes": "lots"}, "bytes", "cannot read size"),
        (net.validate_options, {"pear": "h"}, "pear", "unknown option of load 'net'; did you mean 'peer'?"),
        (net.validate_options, {"peer": "-x"}, "peer", "expected a host name"),
        (net.validate_options, {"bitrate": -5}, "bitrate", "expected bits per second"),
        (net.validate_options, {"packet_size": 70000}, "packet_size", "out of range"),
        (net.validate_options, {"port": 0}, "port", "out of range"),
        (disk.validate_options, {"sise": "1M"}, "sise", "did you mean 'size'?"),
        (disk.validate_options, {"size": 0}, "size", "out of range"),
        (disk.validate_options, {"rw": "randomrw"}, "rw", "unknown value 'randomrw'"),
        (disk.validate_options, {"rwmixread": 101}, "rwmixread", "out of range"),
        (disk.validate_options, {"direct": "yes"}, "direct", "expected true or false"),
        (sched.validate_options, {"loop": 5}, "loop", "did you mean 'loops'?"),
        (sched.validate_options, {"groups": 0}, "groups", "out of range"),
        (sched.validate_options, {"threads": 1}, "threads", "expected true or false"),
    ],
)
def test_option_errors_name_where_and_key(validate, options, key, expected):
    with pytest.raises(UserError) as err:
        validate(options, "c.toml:loads.x")
    assert str(err.value).startswith(f"c.toml:loads.x.{key}: ")
    assert expected in str(err.value)


# --- parsing the tools' reports --------------------------------------------------------------------


def test_iperf3_reports_are_parsed_and_missing_numbers_are_none():
    client = ('{"start": {}, "end": {"sum": {"seconds": 2.0, "bytes": 10, "packets": 1000, '
              '"bits_per_second": 5e8, "lost_packets": 0, "sender": true}}, '
              '"error": "interrupt - the client has terminated"}')
    assert net.parse_client(client) == (500.0, 500.0)
    assert net.parse_client('{"start": {}, "error": "unable to connect"}') is None
    assert net.parse_client("") is None
    server = '{"end": {"sum": {"packets": 400, "lost_packets": 100}}}'
    assert net.parse_loss(server) == 0.25
    assert net.parse_loss("{}") is None


def test_fio_report_is_parsed_after_its_signal_line():
    text = ('fio: terminating on signal 15\n{"jobs": [{"job_runtime": 2000, '
            '"read": {"io_bytes": 4000000}, "write": {"io_bytes": 2000000}}]}')
    assert disk.parse_report(text) == (2.0, 1.0)
    assert disk.parse_report('{"jobs": [{"job_runtime": 0, "read": {"io_bytes": 0}, '
                             '"write": {"io_bytes": 0}}]}') == (0.0, 0.0)  # stopped before it moved
    assert disk.parse_report("fio: terminating on signal 15\n") is None  # no report at all


def test_a_disk_load_stopped_before_it_moved_a_byte_fails_its_run_saying_so(tmp_path):
    if shutil.which("fio") is None:
        pytest.skip("no fio")
    # 1 GiB to lay out before the first byte is moved: stopped once it lays out (its signal handler
    # is in place then), fio has moved nothing
    load, _ = start("disk", tmp_path, options={"size": "1G"})
    laid_out(tmp_path / "scratch" / "fio-data", 1)
    with pytest.raises(RunFailed) as err:
        load.stop()
    assert str(err.value) == ("disk load: fio was stopped before it moved a byte (it first lays out its "
                              "1G of files); give the run a longer duration or [loads.disk] a smaller size")
    assert not (tmp_path / "scratch" / "fio-data").exists()  # its files are removed all the same


def test_hackbench_rounds_and_messages():
    log = "Running in process mode with 2 groups\nTime: 0.5\nRunning...\nTime: 1.5\n"
    assert sched.parse_rounds(log) == [0.5, 1.5]
    opts = sched.SchedOptions.of(sched.validate_options({"groups": 2, "fds": 5, "loops": 50}, "w"))
    assert sched.messages_per_round(opts) == 2 * 5 * 5 * 50


def test_a_peer_that_does_not_answer_is_a_user_error():
    target = FakeTarget()
    target.respond(["iperf3"], response=Completed(
        (), 1, '{"start": {}, "error": "unable to connect to server: Connection refused"}', ""))
    with pytest.raises(UserError) as err:
        net.preflight(target, {"peer": "192.0.2.7", "port": 5201}, "c.toml:loads.net")
    message = str(err.value)
    assert message.startswith("c.toml:loads.net: peer 192.0.2.7:5201 does not answer")
    assert "Connection refused" in message and "iperf3 -s -p 5201" in message
    net.preflight(FakeTarget(), {}, "w")  # loopback: jitterlab starts the server itself


# --- the real tools ----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["memory", "net", "disk", "sched"])
def test_load_runs_reports_and_leaves_nothing(name, tmp_path):
    if shutil.which(TOOL[name]) is None:
        pytest.skip(f"no {TOOL[name]}")
    load, target = start(name, tmp_path, cpus=(0, 1) if name == "memory" else None)
    pgids, markers = started(target)
    assert pgids and live_pids_of(pgids, markers)
    load.check()
    if name == "disk":  # fio lays out its file before it moves data: waited for, never timed
        laid_out(tmp_path / "scratch" / "fio-data", 8 << 20)
    time.sleep(0.6)
    load.check()
    metrics = {m.name: m for m in load.stop()}
    metric, unit = UNITS[name]
    assert metrics[metric].value > 0 and metrics[metric].unit == unit
    assert all(m.name.startswith("load_") for m in metrics.values())
    assert live_pids_of(pgids, markers) == []
    assert target.live_pids() == []
    remove_records(target)  # what the end of a run does
    assert os.listdir(tmp_path / "work" / "live") == []  # records forgotten
    assert load.stop() == list(metrics.values())  # a second stop changes nothing
    if name == "net":
        assert metrics["load_net_packets_per_s"].value > 0
    if name == "disk":
        assert not (tmp_path / "scratch" / "fio-data").exists()


@pytest.mark.parametrize("name", ["memory", "net", "disk", "sched"])
def test_load_killed_from_outside_fails_check_clearly(name, tmp_path):
    if shutil.which(TOOL[name]) is None:
        pytest.skip(f"no {TOOL[name]}")
    load, target = start(name, tmp_path)
    pgids, markers = started(target)
    for proc in list(target._live):
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    # the net client may notice its dead server first and exit by itself: a reason all the same
    with pytest.raises(RunFailed, match=r"is no longer running \((killed by SIGKILL|exit status)"):
        load.check()
    with contextlib.suppress(RunFailed):  # what a killed tool achieved may be unknown: say so
        load.stop()
    assert live_pids_of(pgids, markers) == []


@needs("iperf3")
def test_net_stop_without_a_report_is_run_failed(tmp_path):
    load, target = start("net", tmp_path)
    for proc in list(target._live):
        if "-c" in proc.argv:
            os.killpg(proc.pid, signal.SIGKILL)
    with pytest.raises(RunFailed, match="could not read what iperf3 sent"):
        load.stop()


@needs("iperf3")
def test_net_port_in_use_is_a_clear_failure(tmp_path):
    first, _ = start("net", tmp_path / "a")
    try:
        with pytest.raises(RunFailed, match="iperf3 server is no longer running"):
            start("net", tmp_path / "b")
    finally:
        first.stop()


@needs("stress-ng")
def test_stress_ng_lifetime_is_bounded_by_max_duration(tmp_path):
    load, target = start("memory", tmp_path)
    (proc,) = target._live
    assert proc.argv[proc.argv.index("--timeout") + 1] == "60s"
    load.stop()


@needs("stress-ng")
@pytest.mark.parametrize("name", ["memory", "cpu"])
def test_a_stress_ng_load_stopped_as_soon_as_it_runs_still_reports_what_it_achieved(tmp_path, name):
    """Stopped within ms of its workers' start, stress-ng reported no figures (7 of 40 stops here, the
    memory load most often): a stop waits until the load has run MIN_LIFE_S."""
    from jitterlab.measure.loads.cpu import MIN_LIFE_S

    for i in range(6):
        load, _ = start(name, tmp_path / str(i)) if name in FAST_OPTIONS else _cpu_load(tmp_path / str(i))
        began = time.monotonic()
        metrics = {m.name: m.value for m in load.stop()}
        assert metrics["load_bogo_ops_per_s"] >= 0 and time.monotonic() - began >= MIN_LIFE_S * 0.9


def _cpu_load(tmp_path: Path) -> tuple[object, LocalTarget]:
    target = LocalTarget(workdir=str(tmp_path / "work"))
    load = LOADS.get("cpu", "test").factory()
    load.start(LoadContext(target, str(tmp_path / "scratch"), options={"workers": 1}, max_duration_s=60))
    return load, target
