"""SSHTarget against a real OpenSSH server on loopback: commands, processes, files, failures.

The "remote" machine is this one, so what a command left behind is checked in /proc directly.
Timing is never asserted.
"""

from __future__ import annotations

import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterlab.campaign.file import parse_campaign
from jitterlab.model.errors import RunFailed, TargetLost, UserError
from jitterlab.targets.base import CommandTimeout, Process, Target
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.ssh.loopback_sshd import available, free_port
from jitterlab.targets.ssh.options import from_url, parse_options
from jitterlab.targets.ssh.target import SSHTarget
from tests.support import (
    check_signal_and_wait,
    eventually,
    group_members,
    new_ssh_key,
    processes_mentioning,
    put_and_get_a_tree,
)

pytestmark = pytest.mark.skipif(available() is not None, reason=str(available()))

HOSTILE = ["a b", "'", '"', "$(touch PWNED)", "`touch PWNED`", "; touch PWNED", "x\ny", "$HOME", "*"]
HOSTILE += ["\\", "-n", "", "--", "%h %%", "~"]


def connect(name: str, options: dict) -> SSHTarget:
    return TARGETS.get("ssh", "test")(name, options)  # type: ignore[return-value]


@pytest.fixture
def target(sshd, tmp_path):
    t = connect("board", sshd.options(workdir=str(tmp_path / "work")))
    yield t
    t.close()


def test_is_a_target_with_its_workdir(target, tmp_path):
    assert isinstance(target, Target)
    assert target.workdir == str(tmp_path / "work")
    assert (tmp_path / "work").is_dir()


def test_default_workdir_is_per_user(sshd):
    t = connect("board", sshd.options())
    try:
        assert t.workdir == f"/tmp/jitterlab-{sshd.user}"
    finally:
        t.close()


def test_run_captures_rc_stdout_stderr(target):
    done = target.run(["sh", "-c", "echo out; echo err >&2; exit 3"])
    assert (done.rc, done.stdout, done.stderr, done.ok) == (3, "out\n", "err\n", False)
    assert done.argv == ("sh", "-c", "echo out; echo err >&2; exit 3")
    assert target.run(["/nonexistent/jitterlab-no-such-tool"]).rc == 127


def test_hostile_words_reach_the_target_literally(target, tmp_path):
    done = target.run(["printf", "%s\\n", *HOSTILE])
    assert done.stdout == "".join(f"{word}\n" for word in HOSTILE)
    weird = f"{target.workdir}/we ird;$(touch PWNED)'\"name\nx"
    local = tmp_path / "payload"
    local.write_bytes(b"\0bytes\n")
    target.put(local, weird)
    target.get(weird, tmp_path / "back")
    assert (tmp_path / "back").read_bytes() == b"\0bytes\n"
    assert Path(weird).read_bytes() == b"\0bytes\n"
    proc = target.spawn(["sh", "-c", 'printf "%s|" "$@"', "sh", *HOSTILE], log_path=f"{weird}.log")
    assert proc.wait(30) == 0
    proc.stop()
    assert Path(f"{weird}.log").read_text() == "".join(f"{word}|" for word in HOSTILE)
    assert not list(Path.home().glob("PWNED")) and not list(tmp_path.rglob("PWNED"))


def test_run_timeout_kills_the_whole_group(target, tmp_path):
    pidfile = tmp_path / "pid"
    with pytest.raises(CommandTimeout):
        target.run(["sh", "-c", 'echo $$ > "$0"; sleep 100 & sleep 100', str(pidfile)], 0.5)
    pgid = int(pidfile.read_text())
    assert eventually(lambda: group_members(pgid)) == []


def test_run_leaves_no_background_child(target, tmp_path):
    pidfile = tmp_path / "pid"
    assert target.run(["sh", "-c", 'echo $$ > "$0"; sleep 100 >/dev/null 2>&1 &', str(pidfile)]).ok
    assert eventually(lambda: group_members(int(pidfile.read_text()))) == []


def test_spawn_stop_kills_children_and_is_idempotent(target, tmp_path):
    log = tmp_path / "log"
    proc = target.spawn(["sh", "-c", "echo started; sleep 100 & sleep 100"], log_path=str(log))
    assert isinstance(proc, Process)
    assert eventually(lambda: len(group_members(proc.pid)) < 2) is False  # sh and its sleeps
    assert os.getsid(proc.pid) == proc.pid  # a session of its own on the target
    assert proc.poll() is None
    rc = proc.stop(grace_s=1.0)
    assert rc == -signal.SIGTERM
    assert group_members(proc.pid) == []
    assert proc.stop() == rc
    assert proc.poll() == rc
    assert log.read_text() == "started\n"


def test_ignoring_sigterm_gets_sigkill_after_grace(target, tmp_path):
    ready = tmp_path / "ready"
    proc = target.spawn(["sh", "-c", 'trap "" TERM; echo 1 > "$0"; sleep 100', str(ready)])
    assert eventually(lambda: not ready.exists()) is False
    assert proc.stop(grace_s=0.2) == -signal.SIGKILL
    assert group_members(proc.pid) == []


def test_signal_reaches_the_program_and_wait(target):
    check_signal_and_wait(target, timeout_s=30)


def test_exit_status_of_a_spawned_command(target):
    proc = target.spawn(["sh", "-c", "exit 7"])
    assert proc.wait(30) == 7
    assert proc.stop() == 7


def test_close_stops_every_live_process_and_the_master(sshd, tmp_path):
    t = connect("board", sshd.options(workdir=str(tmp_path)))
    procs = [t.spawn(["sh", "-c", "sleep 100 & sleep 100"]) for _ in range(2)]
    assert all(group_members(p.pid) for p in procs)
    control = Path(t.control_path)
    t.close()
    assert all(p.poll() is not None for p in procs)
    assert all(group_members(p.pid) == [] for p in procs)
    assert not control.exists() and not control.parent.exists()


def test_put_get_file_and_tree(target, tmp_path):
    back = put_and_get_a_tree(target, tmp_path)
    with pytest.raises(FileNotFoundError):
        target.get(f"{target.workdir}/no-such-file", back / "x")
    assert not (back / "x").exists()


def test_full_disk_during_put_says_so(target, tmp_path):
    local = tmp_path / "f"
    local.write_bytes(b"x" * 4096)
    with pytest.raises(RunFailed, match="the disk is full: no space left writing /dev/full"):
        target.put(local, "/dev/full")


def test_one_master_connection_is_reused(sshd, tmp_path):
    accepted = lambda: sshd.log.read_text().count("Accepted publickey")  # noqa: E731
    before = accepted()
    t = connect("board", sshd.options(workdir=str(tmp_path)))
    try:
        assert stat.S_ISSOCK(os.stat(t.control_path).st_mode)
        assert t.master_alive()  # ssh -O check
        for _ in range(3):
            assert t.run(["true"]).ok
        t.spawn(["true"]).stop()
        t.put(Path(__file__), f"{tmp_path}/copy.py")
        assert accepted() == before + 1  # one handshake for all of them
    finally:
        t.close()
    assert not t.master_alive()


def test_unknown_host_key_is_refused_by_default(sshd, tmp_path):
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    with pytest.raises(UserError) as info:
        connect("board", sshd.options(known_hosts=str(empty)))
    message = str(info.value)
    assert "is not in" in message and "ssh-keyscan -p" in message and "accept_new_host_key = true" in message
    assert "\n" not in message


def test_unknown_host_key_is_accepted_with_the_option(sshd, tmp_path):
    known = tmp_path / "known_hosts"
    options = sshd.options(known_hosts=str(known), accept_new_host_key=True, workdir=str(tmp_path))
    t = connect("board", options)
    t.close()
    assert subprocess.run(
        ["ssh-keygen", "-F", f"[127.0.0.1]:{sshd.port}", "-f", str(known)], capture_output=True
    ).stdout


@pytest.mark.parametrize("accept_new", [False, True])
def test_changed_host_key_is_refused(sshd, tmp_path, accept_new):
    other = new_ssh_key(tmp_path / "other")
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.1]:{sshd.port} {' '.join(Path(f'{other}.pub').read_text().split()[:2])}\n")
    with pytest.raises(UserError) as info:
        connect("board", sshd.options(known_hosts=str(known), accept_new_host_key=accept_new))
    message = str(info.value)
    assert "host key has CHANGED" in message and "refusing" in message
    assert f"ssh-keygen -f {known} -R '[127.0.0.1]:{sshd.port}'" in message
    assert "\n" not in message


def test_wrong_key_is_permission_denied(sshd, tmp_path):
    stranger = new_ssh_key(tmp_path / "stranger")
    with pytest.raises(UserError, match=r"refused our key \(Permission denied \(publickey\)\)"):
        connect("board", sshd.options(key=str(stranger)))


def test_closed_port_is_unreachable(sshd):
    with pytest.raises(TargetLost, match="connection refused"):
        connect("board", sshd.options(port=free_port(), connect_timeout="1s"))


def test_silent_port_times_out_after_connect_timeout(sshd):
    import socket

    with socket.socket() as mute:  # accepts TCP connections (backlog) but never says a word
        mute.bind(("127.0.0.1", 0))
        mute.listen(8)
        with pytest.raises(TargetLost, match=r"no answer within 1s \(connect_timeout\)"):
            connect("board", sshd.options(port=mute.getsockname()[1], connect_timeout="1s"))


_CONTROLLER = """
import sys, time
from jitterlab.targets.registry import TARGETS
import json
t = TARGETS.get("ssh", "x")("board", json.loads(sys.argv[1]))
p = t.spawn(["sh", "-c", "sleep 1000 & sleep 1000", sys.argv[2]])
print(p.pid, flush=True)
time.sleep(1000)
"""


def test_a_killed_controller_leaves_nothing_running(sshd, tmp_path):
    import json

    marker = f"jl-marker-{os.getpid()}-{time.monotonic_ns()}"
    controller = subprocess.Popen(
        [sys.executable, "-c", _CONTROLLER, json.dumps(sshd.options(workdir=str(tmp_path))), marker],
        stdout=subprocess.PIPE,
    )
    pgid = int(controller.stdout.readline())
    assert group_members(pgid) and processes_mentioning(marker)
    controller.kill()
    controller.wait()
    assert eventually(lambda: processes_mentioning(marker)) == []  # the ssh channel closed: the group died


def test_a_dropped_connection_kills_the_command_and_says_lost(tmp_path, start_sshd):
    server = start_sshd("sshd")
    t = connect("board", server.options(workdir=str(tmp_path / "w"), connect_timeout="2s"))
    try:
        proc = t.spawn(["sleep", "1000"])
        server.drop()
        assert eventually(lambda: group_members(proc.pid)) == []
        assert proc.wait(30) == 255
        with pytest.raises(TargetLost, match="target 'board'"):
            t.run(["true"])
    finally:
        t.close()


def test_a_silent_target_is_lost_after_alive_timeout_and_the_error_says_so(tmp_path, start_sshd):
    server = start_sshd("sshd")
    options = server.options(workdir=str(tmp_path / "w"), connect_timeout="2s", alive_timeout="5s")
    t = connect("board", options)
    try:
        assert "ServerAliveCountMax=1" in t.ssh_argv(["true"])  # asked every 5 s: one unanswered is lost
        server.freeze()  # up, but answers nothing (a CPU hogged by real-time threads)
        # the master's keep-alive gave up; ssh then tried a connection of its own, as silent
        lost = r"connection lost, and a new connection failed too: no answer within 2s"
        lost += r".*silent for 5s \(alive_timeout\).*raise alive_timeout"
        with pytest.raises((TargetLost, CommandTimeout)) as raised:
            t.run(["sleep", "60"], timeout_s=90)
        # which mechanism gave up: the command's own timeout would have been a CommandTimeout, "killed"
        assert isinstance(raised.value, TargetLost), f"the command's timeout fired: {raised.value}"
        assert re.search(lost, str(raised.value)), str(raised.value)
        assert not t.master_alive()  # the keep-alive ended the master connection
    finally:
        server.freeze(False)
        t.close()


# --- options -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "t.host: an ssh target needs a host"),
        ({"host": "-oProxyCommand=touch /tmp/x"}, "t.host: expected a host name"),
        ({"host": "b", "port": 0}, "t.port: expected a TCP port number"),
        ({"host": "b", "prot": 22}, "t.prot: unknown option of an ssh target; did you mean 'port'?"),
        ({"host": "b", "user": "-l"}, "t.user: expected a login name"),
        ({"host": "b", "key": "/nonexistent/key"}, "t.key: no such file"),
        ({"host": "b", "connect_timeout": 10}, "t.connect_timeout: expected a duration"),
        ({"host": "b", "alive_timeout": "2s"}, 't.alive_timeout: ssh asks every 5 s; give "5s" or more'),
        ({"host": "b", "accept_new_host_key": "yes"}, "t.accept_new_host_key: expected true or false"),
        ({"host": "b", "workdir": "tmp"}, "t.workdir: expected an absolute path"),
    ],
)
def test_bad_options_name_the_key(options, message):
    with pytest.raises(UserError, match="^" + message.replace("(", r"\(").replace("?", r"\?")):
        parse_options(options, "t", check_files=True)
    if "key" not in options:  # a campaign may name a key that exists only where it runs
        parse_options({"host": "b", "key": "/nonexistent/key"}, "t")


def test_defaults_and_url():
    o = parse_options({"host": "board1.lab"}, "t")
    assert (o.port, o.user, o.known_hosts, o.accept_new_host_key, o.connect_timeout_s, o.alive_timeout_s) == (
        22, None, "~/.ssh/known_hosts", False, 10.0, 15.0,
    )  # fmt: skip
    u = from_url("ssh://pi@10.1.2.3:2222", "doctor")
    assert (u.user, u.host, u.port) == ("pi", "10.1.2.3", 2222)
    with pytest.raises(UserError, match="write it like ssh://user@host:22"):
        from_url("ssh://", "doctor")


def test_campaign_checks_ssh_options_before_connecting(tmp_path):
    data = {
        "campaign": {"name": "c"},
        "target": [{"name": "b1", "kind": "ssh", "host": "b1.lab", "port": 2222, "user": "root"}],
        "matrix": {"impl": ["python"], "period": ["10ms"]},
    }
    [spec] = parse_campaign(data, tmp_path / "c.toml").targets
    assert spec.options == {"host": "b1.lab", "port": 2222, "user": "root"}
    data["target"][0]["hots"] = "x"
    with pytest.raises(UserError, match=r"c.toml: target\[0\].hots: unknown option of an ssh target"):
        parse_campaign(data, tmp_path / "c.toml")
    data["target"] = [{"name": "l", "kind": "local", "host": "x"}]
    with pytest.raises(UserError, match=r"c.toml: target\[0\].host: unknown option of a local target"):
        parse_campaign(data, tmp_path / "c.toml")


def test_a_hostile_workdir_is_used_literally(sshd, tmp_path):
    from jitterlab.execution.sweep import sweep
    from jitterlab.targets.processes import live_dir, remove_records, spawn_recorded

    workdir = tmp_path / "w $(touch PWNED);'\"`touch PWNED` x"
    t = connect("board", sshd.options(workdir=str(workdir)))
    try:
        assert t.workdir == str(workdir) and workdir.is_dir()
        proc = spawn_recorded(t, ["sleep", "100"], log_path=f"{t.workdir}/log")
        assert eventually(lambda: not Path(proc.pidfile).exists()) is False  # the launcher writes it
        assert Path(live_dir(t)).is_dir()
        assert sweep(t) == []  # its owner (this process) is alive: not a leftover
        proc.stop()
        remove_records(t)  # what the end of a run does
        assert not Path(proc.pidfile).exists()
    finally:
        t.close()
    assert not list(tmp_path.rglob("PWNED")) and not list(Path.home().glob("PWNED"))
