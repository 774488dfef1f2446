"""The UDP programs (udp-echo-server/-client, pps-send/-recv): flags, policies, a real exchange,
and that none outlives its parent. Structure only: no timing is asserted."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import jitterlab.programs
from jitterlab.measure.benchmarks.pps import parse_stats
from jitterlab.measure.benchmarks.udp_echo import parse_client_output
from tests.support import free_port, group_alive

PROGRAMS = Path(jitterlab.programs.__file__).parent
UDP_PROGRAMS = ("udp-echo-server", "udp-echo-client", "pps-send", "pps-recv")
PORT = free_port()  # one free loopback port for this module's servers


@pytest.fixture(scope="module")
def bindir(tmp_path_factory) -> Path:
    """The C programs built from a copy with their Makefile, as on a target."""
    dst = tmp_path_factory.mktemp("udp") / "c"
    shutil.copytree(PROGRAMS / "c", dst, ignore=lambda d, names: [n for n in names if "." not in n
                                                                   and n != "Makefile"])
    done = subprocess.run(["make", "-s", "-C", str(dst), *UDP_PROGRAMS], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return dst


def run(bindir: Path, name: str, *args: str, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([str(bindir / name), *args], capture_output=True, text=True, timeout=timeout)


class Started:
    """A server program in its own process group, stopped (and checked gone) on exit."""

    def __init__(self, argv: list[str], ready: Path) -> None:
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     start_new_session=True)
        deadline = time.monotonic() + 10
        while not ready.exists():
            assert self.proc.poll() is None, self.proc.communicate()
            assert time.monotonic() < deadline, "never became ready"
            time.sleep(0.005)

    def stop(self) -> tuple[int, str]:
        self.proc.send_signal(signal.SIGTERM)
        out, err = self.proc.communicate(timeout=10)
        assert not group_alive(self.proc.pid)
        return self.proc.returncode, out + err

    def __enter__(self) -> Started:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait()


def echo_server(bindir: Path, tmp_path: Path, *extra: str) -> Started:
    ready = tmp_path / "server.ready"
    argv = [str(bindir / "udp-echo-server"), "--bind", "127.0.0.1", "--port", str(PORT),
            "--ready", str(ready), "--max-duration-ns", "60000000000", *extra]
    return Started(argv, ready)


# --- argument errors: exit 2, one line naming the flag ------------------------------------------

@pytest.mark.parametrize(("name", "args", "says"), [
    ("udp-echo-client", [], "--host, --port and --out are required"),
    ("udp-echo-client", ["--host", "127.0.0.1", "--port", "0", "--out", "x"], "--port 0"),
    ("udp-echo-client", ["--host", "localhost", "--port", "1", "--out", "x", "--count", "1"],
     "--host needs a numeric IPv4 or IPv6 address"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x", "--size", "8"], "--size 8"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x"], "give --count or --duration-ns"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x", "--count", "1",
                         "--policy", "batch"], "--policy batch"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x", "--count", "1",
                         "--prio", "100"], "--prio 100"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x", "--count", "1",
                         "--interval-ns", "-5"], "--interval-ns -5"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x", "--count", "1",
                         "--policy", "deadline"], "--policy deadline needs --dl-runtime-ns"),
    ("udp-echo-client", ["--host", "::1", "--port", "1", "--out", "x", "--count", "1",
                         "--dl-runtime-ns", "200000", "--dl-period-ns", "100000"],
     "--dl-runtime-ns must not exceed --dl-period-ns"),
    ("udp-echo-server", ["--bind", "127.0.0.1", "--port", "1"], "--bind, --port and --ready are required"),
    ("udp-echo-server", ["--bind", "127.0.0.1", "--port", "70000", "--ready", "r"], "--port 70000"),
    ("udp-echo-server", ["--bind", "127.0.0.1", "--port", "1", "--ready", "r", "--frob", "1"], "--frob 1"),
    ("udp-echo-server", ["--bind", "127.0.0.1", "--port"], "--port"),
    ("pps-send", ["--host", "127.0.0.1", "--port", "1", "--stats", "s"], "--duration-ns and --stats"),
    ("pps-send", ["--host", "127.0.0.1", "--port", "1", "--stats", "s", "--duration-ns", "1",
                  "--batch", "0"], "--batch 0"),
    ("pps-send", ["--host", "127.0.0.1", "--port", "1", "--stats", "s", "--duration-ns", "1",
                  "--rate", "lots"], "--rate lots"),
    ("pps-recv", ["--bind", "127.0.0.1", "--port", "1", "--ready", "r"], "--ready and --stats are required"),
    ("pps-recv", ["--bind", "127.0.0.1", "--port", "1", "--ready", "r", "--stats", "s",
                  "--batch", "5000"], "--batch 5000"),
])
def test_bad_arguments_exit_2_with_one_line(bindir, tmp_path, name, args, says):
    done = run(bindir, name, *args)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith(f"{name}: ") and says in line, line


@pytest.mark.parametrize("name", UDP_PROGRAMS)
def test_help_prints_usage(bindir, name):
    done = run(bindir, name, "--help")
    assert done.returncode == 0 and done.stdout.startswith(f"usage: {name} ")


def test_a_taken_port_is_one_line_and_status_1(bindir, tmp_path):
    with echo_server(bindir, tmp_path) as server:
        done = run(bindir, "udp-echo-server", "--bind", "127.0.0.1", "--port", str(PORT),
                   "--ready", str(tmp_path / "other.ready"))
        server.stop()
    assert done.returncode == 1
    assert done.stderr.strip() == (f"udp-echo-server: cannot bind 127.0.0.1 port {PORT}: "
                                   "Address already in use")


# --- policies -----------------------------------------------------------------------------------

def _deadline_period_min_us() -> int | None:
    try:
        return int(Path("/proc/sys/kernel/sched_deadline_period_min_us").read_text())
    except OSError:
        return None


CLIENT_ARGS = ["--host", "127.0.0.1", "--port", str(PORT), "--count", "5", "--timeout-ns", "1000000"]


@pytest.mark.skipif((_deadline_period_min_us() or 0) <= 50, reason="the kernel accepts a 50us period")
def test_a_refused_deadline_says_why_and_how_to_fix_it(bindir, tmp_path):
    done = run(bindir, "udp-echo-client", *CLIENT_ARGS, "--out", str(tmp_path / "o"),
               "--policy", "deadline", "--dl-runtime-ns", "10000", "--dl-period-ns", "50000")
    assert done.returncode == 3
    assert done.stderr == (
        "udp-echo-client: SCHED_DEADLINE refused by the kernel: Invalid argument (EINVAL); the kernel "
        "rejects these parameters: the period (the interval) must lie within "
        "/proc/sys/kernel/sched_deadline_period_{min,max}_us\n"
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2 or os.geteuid() != 0,
                    reason="needs root and two CPUs to restrict the affinity")
def test_deadline_with_a_restricted_affinity_is_refused_with_eperm(bindir, tmp_path):
    cpu = str(min(os.sched_getaffinity(0)))
    argv = ["taskset", "-c", cpu, str(bindir / "udp-echo-server"), "--bind", "127.0.0.1", "--port",
            str(PORT), "--ready", str(tmp_path / "r"), "--policy", "deadline",
            "--dl-runtime-ns", "100000", "--dl-period-ns", "1000000"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    assert done.returncode == 3
    assert done.stderr.startswith("udp-echo-server: SCHED_DEADLINE refused by the kernel: "
                                  "Operation not permitted (EPERM); needs root or CAP_SYS_NICE, "
                                  "an affinity spanning all CPUs")


def test_allow_no_rt_turns_a_refusal_into_a_warning(bindir, tmp_path):
    if (_deadline_period_min_us() or 0) <= 50:
        pytest.skip("the kernel accepts a 50us period")
    with echo_server(bindir, tmp_path) as server:
        done = run(bindir, "udp-echo-client", *CLIENT_ARGS, "--out", str(tmp_path / "o"),
                   "--policy", "deadline", "--dl-runtime-ns", "10000", "--dl-period-ns", "50000",
                   "--allow-no-rt")
        server.stop()
    assert done.returncode == 0, done.stderr
    assert done.stdout == "warning: SCHED_DEADLINE refused by the kernel (EINVAL), running as SCHED_OTHER\n"
    assert parse_client_output((tmp_path / "o").read_text()).sent == 5


@pytest.mark.parametrize("policy", [
    [], ["--policy", "fifo", "--prio", "70"], ["--policy", "rr", "--prio", "70"],
    ["--policy", "deadline", "--dl-runtime-ns", "500000", "--dl-period-ns", "1000000"],
])
def test_echo_round_trips_in_each_policy(bindir, tmp_path, policy):
    """Where the kernel refuses a policy the programs say so with status 3; else every reply counts."""
    out = tmp_path / "rtt.txt"
    ready = tmp_path / "server.ready"
    argv = [str(bindir / "udp-echo-server"), "--bind", "127.0.0.1", "--port", str(PORT),
            "--ready", str(ready), *policy]
    server = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              start_new_session=True)
    try:
        while not ready.exists() and server.poll() is None:
            time.sleep(0.005)
        if server.poll() == 3:
            assert "refused by the kernel" in server.stderr.read()
            return
        done = run(bindir, "udp-echo-client", "--host", "127.0.0.1", "--port", str(PORT), "--out",
                   str(out), "--count", "20", "--interval-ns", "1000000", "--size", "100", *policy)
    finally:
        server.send_signal(signal.SIGTERM)
        server_out, _ = server.communicate(timeout=10)
    assert done.returncode == 0, done.stderr
    result = parse_client_output(out.read_text())
    assert result.sent == 20 and result.received + result.lost == 20
    assert result.header["size"] == "100"
    assert result.header["policy"] == (policy[1] if policy else "other")
    assert (result.rtt_ns > 0).all()
    assert server_out.startswith("echoed=")
    assert not group_alive(server.pid)


def test_the_client_counts_lost_messages_when_no_server_answers(bindir, tmp_path):
    out = tmp_path / "rtt.txt"
    done = run(bindir, "udp-echo-client", *CLIENT_ARGS, "--out", str(out))
    assert done.returncode == 0, done.stderr
    result = parse_client_output(out.read_text())
    assert (result.sent, result.received, result.lost) == (5, 0, 5)


# --- pps ----------------------------------------------------------------------------------------

def test_pps_send_and_receive_over_loopback(bindir, tmp_path):
    ready, recv_stats, send_stats = tmp_path / "r", tmp_path / "recv.stats", tmp_path / "send.stats"
    with Started([str(bindir / "pps-recv"), "--bind", "127.0.0.1", "--port", str(PORT), "--ready",
                  str(ready), "--stats", str(recv_stats), "--batch", "16"], ready) as receiver:
        done = run(bindir, "pps-send", "--host", "127.0.0.1", "--port", str(PORT), "--size", "3000",
                   "--batch", "16", "--rate", "2000", "--duration-ns", "100000000",
                   "--stats", str(send_stats))
        time.sleep(0.1)
        rc, _ = receiver.stop()
    assert done.returncode == 0 and rc == 0, done.stderr
    sent = parse_stats(send_stats.read_text(), "pps-send")
    received = parse_stats(recv_stats.read_text(), "pps-recv")
    assert sent["sent"] > 0 and sent["bytes"] == sent["sent"] * 3000
    assert received["bytes"] == received["received"] * 3000  # longer than its buffer: MSG_TRUNC
    assert 0 < received["received"] <= sent["sent"]
    assert received["first_ns"] <= received["last_ns"]


# --- none outlives its parent (PR_SET_PDEATHSIG) ------------------------------------------------

PARENT = """
import subprocess, sys, time
child = subprocess.Popen(sys.argv[1:])
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("name", ["udp-echo-server", "pps-recv", "udp-echo-client"])
def test_a_program_dies_with_its_parent(bindir, tmp_path, name):
    args = {
        "udp-echo-server": ["--bind", "127.0.0.1", "--port", str(PORT), "--ready", str(tmp_path / "r")],
        "pps-recv": ["--bind", "127.0.0.1", "--port", str(PORT), "--ready", str(tmp_path / "r"),
                     "--stats", str(tmp_path / "s")],
        "udp-echo-client": ["--host", "127.0.0.1", "--port", str(PORT), "--out", str(tmp_path / "o"),
                            "--duration-ns", "60000000000"],
    }[name]
    parent = subprocess.Popen([sys.executable, "-c", PARENT, str(bindir / name), *args],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        child = int(parent.stdout.readline())
        time.sleep(0.3)
        assert group_alive(parent.pid)
        parent.kill()  # SIGKILL to the parent only: the child must go by itself
        parent.wait()
        deadline = time.monotonic() + 10
        while group_alive(parent.pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not group_alive(parent.pid), f"{name} (pid {child}) outlived its parent"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(parent.pid, signal.SIGKILL)
        parent.stdout.close()
