"""LabgridTarget against a real labgrid farm on loopback: an OpenSSH server as the board, a
labgrid-coordinator, and a labgrid-exporter announcing the board's NetworkService.

Every service is started here and stopped by its Popen in the fixture's teardown. The "board" is
this machine, so the tests look at its /proc to check what runs. Timing is never asserted.
"""

from __future__ import annotations

import getpass
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.store.catalog import Store
from jitterlab.targets.base import CommandTimeout, Process, Target
from jitterlab.targets.labgrid.target import LabgridTarget, parse_options
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.ssh.loopback_sshd import SSHD, LoopbackSSHD, free_port
from tests.support import eventually, group_members, processes_mentioning, wait_gone

BIN = Path(sys.executable).parent  # labgrid's commands come with the package, in the venv
EXPORTER = "jltest"
USER = getpass.getuser()
HOSTILE = [
    "a b",
    "it's",
    '"q"',
    "; touch /tmp/jl-pwned",
    "$(touch /tmp/jl-pwned)",
    "`id`",
    "x\ny",
    "",
    "*",
    "\\",
]

pytestmark = pytest.mark.skipif(
    not os.access(SSHD, os.X_OK) or not (BIN / "labgrid-coordinator").exists(),
    reason="needs openssh-server (apt install openssh-server) and labgrid (make test installs both)",
)


def _wait_for(what: str, check, proc: subprocess.Popen, log: Path, timeout_s: float = 30.0):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        result = check()
        if result:
            return result
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    raise AssertionError(f"{what} did not come up: {log.read_text(errors='replace')[-2000:]}")


class Farm:
    """The running services and how to talk to them with labgrid-client."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.procs: list[subprocess.Popen] = []
        self.sshd = LoopbackSSHD(root)  # the board
        self.key = self.sshd.client_key
        self.coordinator = ""
        self.ssh_port = 0

    def start(self, argv: list[str], log: Path, cwd: Path | None = None) -> subprocess.Popen:
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, cwd=cwd, env=_env()
            )
        self.procs.append(proc)
        return proc

    def stop(self) -> None:
        for proc in reversed(self.procs):
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.sshd.stop()

    def client(self, *args: str, user: str | None = None, check: bool = True) -> str:
        env = _env()
        if user is not None:  # someone else, on another machine
            env |= {"LG_USERNAME": user, "LG_HOSTNAME": "lab-pc"}
        done = subprocess.run(
            [str(BIN / "labgrid-client"), "-x", self.coordinator, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        if check:
            assert done.returncode == 0, done.stderr
        return done.stdout + done.stderr

    def holder(self, place: str) -> str | None:
        """Who holds the place, as the coordinator says ("host/user"), or None."""
        for line in self.client("-p", place, "show").splitlines():
            if line.strip().startswith("acquired:"):
                value = line.split(":", 1)[1].strip()
                return None if value == "None" else value
        raise AssertionError(f"labgrid-client show {place}: no 'acquired:' line")

    def options(self, place: str, workdir: Path, **extra: str) -> dict[str, object]:
        return {
            "place": place,
            "coordinator": self.coordinator,
            "keyfile": str(self.key),
            "workdir": str(workdir),
            **extra,
        }


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("LG_")}


def _coordinator_and_exporter(farm: Farm) -> None:
    root = farm.root
    (root / "coordinator").mkdir()  # it keeps places.yaml in its working directory
    log = root / "coordinator.log"
    coordinator = farm.start(
        [str(BIN / "labgrid-coordinator"), "-l", "127.0.0.1:0"], log, cwd=root / "coordinator"
    )

    def listening() -> str | None:
        for line in log.read_text(errors="replace").splitlines():
            if line.startswith("listening on 127.0.0.1:"):
                return line.removeprefix("listening on ")
        return None

    farm.coordinator = _wait_for("labgrid-coordinator", listening, coordinator, log)
    service = f"    address: 127.0.0.1\n    port: {farm.ssh_port}\n    username: {USER}\n"
    (root / "exporter.yaml").write_text(
        f"board1:\n  NetworkService:\n{service}board2:\n  NetworkService:\n{service}"
    )
    log = root / "exporter.log"
    exporter = farm.start(
        [
            str(BIN / "labgrid-exporter"),
            "-c",
            farm.coordinator,
            "--name",
            EXPORTER,
            str(root / "exporter.yaml"),
        ],
        log,
    )
    _wait_for(
        "labgrid-exporter",
        lambda: f"{EXPORTER}/board2/NetworkService" in farm.client("resources", check=False),
        exporter,
        log,
    )


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    """sshd + coordinator + exporter; places: shared (board1), bbb-1 (board2), empty (no resources)."""
    f = Farm(tmp_path_factory.mktemp("farm"))
    try:
        f.ssh_port = f.sshd.start().port
        _coordinator_and_exporter(f)
        for place, group in (("shared", "board1"), ("bbb-1", "board2"), ("empty", None)):
            f.client("-p", place, "create")
            if group:
                f.client("-p", place, "add-match", f"{EXPORTER}/{group}/NetworkService")
        yield f
    finally:
        f.stop()


@pytest.fixture(autouse=True)
def _no_labgrid_environment(monkeypatch):
    for name in [k for k in os.environ if k.startswith("LG_")]:
        monkeypatch.delenv(name)


@pytest.fixture(scope="module")
def board(farm, tmp_path_factory):
    """One target on place "shared" for the tests of the Target protocol."""
    workdir = tmp_path_factory.mktemp("board") / "work"
    target = TARGETS.get("labgrid", "test")("board", farm.options("shared", workdir))
    yield target
    target.close()


def gone(pgid: int, timeout_s: float = 10.0) -> bool:
    return eventually(lambda: group_members(pgid), timeout_s, interval_s=0.02) == []


# -- the Target protocol over the place's SSH connection -----------------------------------------------


def test_is_a_target_with_a_workdir(board):
    assert isinstance(board, Target)
    assert Path(board.workdir).is_dir()
    assert board.address == f"{USER}@127.0.0.1:{board._driver.networkservice.port}"


def test_run_captures_output_and_exit_status(board):
    done = board.run(["sh", "-c", "printf out; printf err >&2; exit 3"])
    assert (done.argv, done.rc, done.stdout, done.stderr) == (
        ("sh", "-c", "printf out; printf err >&2; exit 3"),
        3,
        "out",
        "err",
    )
    assert board.run(["no-such-command-here"]).rc == 127


def test_hostile_argv_arrives_literally(board):
    Path("/tmp/jl-pwned").unlink(missing_ok=True)
    done = board.run(["printf", "%s\\0", *HOSTILE])
    assert done.ok, done.stderr
    assert done.stdout.split("\0")[:-1] == HOSTILE
    out = Path(board.workdir) / "hostile.log"
    proc = board.spawn(["printf", "%s\\0", *HOSTILE], log_path=str(out))
    assert proc.wait(30) == 0
    assert out.read_text().split("\0")[:-1] == HOSTILE
    assert not Path("/tmp/jl-pwned").exists()


def test_run_past_its_timeout_raises_and_kills_the_remote_group(board):
    pidfile = Path(board.workdir) / "slow.pid"
    with pytest.raises(CommandTimeout):
        board.run(["sh", "-c", 'echo $$ > "$0"; sleep 60 & sleep 60', str(pidfile)], timeout_s=1.0)
    assert gone(int(pidfile.read_text()))


def test_spawn_stop_stops_the_whole_group(board):
    proc = board.spawn(["sh", "-c", "sleep 60 & sleep 60"])
    assert isinstance(proc, Process)
    assert proc.poll() is None
    eventually(lambda: len(group_members(proc.pgid)) < 3, 10, interval_s=0.02)
    assert len(group_members(proc.pgid)) == 3  # sh and its two sleeps
    assert proc.stop() == -signal.SIGTERM
    assert gone(proc.pgid)
    assert proc.stop() == -signal.SIGTERM  # idempotent
    assert proc.poll() == -signal.SIGTERM


def test_stop_sends_kill_after_the_grace(board):
    ready = Path(board.workdir) / "stubborn.ready"
    proc = board.spawn(["sh", "-c", "trap '' TERM; touch \"$0\"; while :; do sleep 0.05; done", str(ready)])
    eventually(lambda: not ready.exists(), 10, interval_s=0.02)
    assert proc.stop(grace_s=0.3) == -signal.SIGKILL
    assert gone(proc.pgid)


def test_signal_wait_and_exit_status(board):
    proc = board.spawn(["sleep", "60"])
    with pytest.raises(CommandTimeout):
        proc.wait(0.2)
    proc.signal(signal.SIGINT)
    assert proc.wait(30) == -signal.SIGINT
    assert board.spawn(["sh", "-c", "exit 4"]).wait(30) == 4


def test_put_and_get_files_and_trees(board, tmp_path):
    (tmp_path / "tree" / "sub").mkdir(parents=True)
    (tmp_path / "tree" / "a.txt").write_text("A")
    (tmp_path / "tree" / "sub" / "b b.txt").write_text("B")
    (tmp_path / "one").write_bytes(bytes(range(256)) * 100)
    remote = f"{board.workdir}/put/deeper/one"
    board.put(tmp_path / "one", remote)
    assert Path(remote).read_bytes() == (tmp_path / "one").read_bytes()
    board.put(tmp_path / "tree", f"{board.workdir}/tree")
    board.get(f"{board.workdir}/tree", tmp_path / "back")
    assert (tmp_path / "back" / "sub" / "b b.txt").read_text() == "B"
    board.get(remote, tmp_path / "fetched" / "one")
    assert (tmp_path / "fetched" / "one").read_bytes() == (tmp_path / "one").read_bytes()
    with pytest.raises(OSError, match="missing"):
        board.get(f"{board.workdir}/missing", tmp_path / "nothing")


# -- places: acquire, release, refuse ------------------------------------------------------------------


def test_a_place_is_acquired_while_open_and_released_by_close(farm, tmp_path):
    assert farm.holder("bbb-1") is None
    target = TARGETS.get("labgrid", "test")("bbb", farm.options("bbb-1", tmp_path / "work"))
    try:
        assert farm.holder("bbb-1") is not None
        proc = target.spawn(["sleep", "60"])
    finally:
        target.close()
    assert farm.holder("bbb-1") is None
    assert gone(proc.pgid)
    target.close()  # idempotent
    with pytest.raises(RunFailed):
        target.run(["true"])


def test_a_place_you_hold_already_is_used_and_left_held(farm, tmp_path):
    farm.client("-p", "bbb-1", "acquire")
    try:
        target = TARGETS.get("labgrid", "test")("bbb", farm.options("bbb-1", tmp_path / "work"))
        assert target.run(["true"]).ok
        target.close()
        assert farm.holder("bbb-1") is not None
    finally:
        farm.client("-p", "bbb-1", "release")


def test_a_place_held_by_someone_else_is_refused(farm, tmp_path):
    farm.client("-p", "bbb-1", "acquire", user="alice")
    try:
        with pytest.raises(UserError, match="acquired by lab-pc/alice") as err:
            TARGETS.get("labgrid", "test")("bbb", farm.options("bbb-1", tmp_path / "work"))
        assert "release" in str(err.value) and "\n" not in str(err.value)
        assert farm.holder("bbb-1") == "lab-pc/alice"
    finally:
        farm.client("-p", "bbb-1", "release", user="alice")


def test_unknown_place_names_the_closest(farm, tmp_path):
    with pytest.raises(UserError, match="did you mean 'bbb-1'"):
        TARGETS.get("labgrid", "test")("bbb", farm.options("bbb1", tmp_path / "work"))


def test_a_place_without_a_network_service_is_refused_and_released(farm, tmp_path):
    with pytest.raises(UserError, match="no NetworkService"):
        TARGETS.get("labgrid", "test")("bbb", farm.options("empty", tmp_path / "work"))
    assert farm.holder("empty") is None


def test_an_unreachable_coordinator_is_one_clear_error(tmp_path):
    options = {"place": "bbb-1", "coordinator": f"127.0.0.1:{free_port()}"}
    with pytest.raises(UserError, match="coordinator at 127.0.0.1:[0-9]+ is unreachable"):
        TARGETS.get("labgrid", "test")("bbb", options)


# -- labgrid environment files ---------------------------------------------------------------------


def _env_file(path: Path, resources: str, farm: Farm, extra: str = "") -> Path:
    path.write_text(
        f"targets:\n  main:\n    resources:\n{resources}"
        f"    drivers:\n      SSHDriver:\n        keyfile: {farm.key}\n{extra}"
    )
    return path


def test_env_file_with_a_network_service(farm, tmp_path):
    service = f"      NetworkService:\n        address: 127.0.0.1\n        port: {farm.ssh_port}\n"
    env = _env_file(tmp_path / "board.yaml", service + f"        username: {USER}\n", farm)
    target = TARGETS.get("labgrid", "test")("b", {"env": str(env), "workdir": str(tmp_path / "w")})
    try:
        assert target.run(["echo", "hi"]).stdout == "hi\n"
    finally:
        target.close()


def test_env_file_with_a_remote_place_acquires_and_releases_it(farm, tmp_path):
    options = f"options:\n  coordinator_address: {farm.coordinator}\n"
    env = _env_file(tmp_path / "remote.yaml", "      RemotePlace:\n        name: bbb-1\n", farm, options)
    target = TARGETS.get("labgrid", "test")("b", {"env": str(env), "workdir": str(tmp_path / "w")})
    try:
        assert farm.holder("bbb-1") is not None
        assert target.run(["echo", "hi"]).stdout == "hi\n"
    finally:
        target.close()
    assert farm.holder("bbb-1") is None


def test_env_file_errors(farm, tmp_path):
    factory = TARGETS.get("labgrid", "test")
    with pytest.raises(UserError, match="does not exist"):
        factory("b", {"env": str(tmp_path / "nope.yaml")})
    (tmp_path / "bad.yaml").write_text("targets: [unclosed\n")
    with pytest.raises(UserError, match="bad.yaml"):
        factory("b", {"env": str(tmp_path / "bad.yaml")})
    env = _env_file(tmp_path / "board.yaml", "      RemotePlace:\n        name: bbb-1\n", farm)
    with pytest.raises(UserError, match="no target 'mian'; did you mean 'main'"):
        factory("b", {"env": str(env), "role": "mian"})
    service = "      NetworkService:\n        address: 127.0.0.1\n        port: 1\n        username: x\n"
    closed = _env_file(tmp_path / "closed.yaml", service, farm, "        connection_timeout: 1.0\n")
    with pytest.raises(UserError, match="cannot connect by SSH to x@127.0.0.1:1"):
        factory("b", {"env": str(closed)})


# -- options and installation (no farm needed) -----------------------------------------------------


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "either place"),
        ({"place": "a", "env": "b.yaml"}, "either place"),
        ({"place": "a", "plac": "b"}, r"where\.plac: unknown option .* did you mean 'place'"),
        ({"place": "a", "workdir": "rel"}, r"where\.workdir: must be an absolute path"),
        ({"place": "a", "role": "main"}, r"where\.role: only with env"),
        ({"place": 3}, r"where\.place: expected one line of text"),
        ({"place": "a", "username": "-oProxyCommand=x"}, r"where\.username: expected a login name"),
        ({"place": "a\nb"}, r"where\.place: expected one line of text"),
    ],
)
def test_option_errors_name_the_key(options, message):
    with pytest.raises(UserError, match=message):
        parse_options(options, "where")


def test_the_host_key_is_verified_with_known_hosts_and_said_unverified_without(farm, tmp_path, board,
                                                                                 monkeypatch):
    from jitterlab.cli.commands.doctor import diagnose
    from jitterlab.targets.capabilities import host_key_warning

    assert board.host_key_verified is False
    warning = host_key_warning(board)
    assert warning is not None and "StrictHostKeyChecking=no" in warning.message
    assert 'known_hosts = "~/.ssh/known_hosts"' in warning.remedy
    assert any(f.topic == "host key" and f.fix == warning.remedy for f in diagnose(board)[1])
    options = farm.options("bbb-1", tmp_path / "work", known_hosts=str(farm.sshd.known_hosts))
    target = TARGETS.get("labgrid", "test")("bbb", options)
    try:
        assert target.host_key_verified and host_key_warning(target) is None and target.run(["true"]).ok
    finally:
        target.close()
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    # ssh refuses the key on the first try, but labgrid's SSHDriver retries its master connection for
    # its connection_timeout (30 s, which no option of a place sets): 3 s of retries here
    from labgrid.driver import sshdriver
    from labgrid.util.timeout import Timeout

    monkeypatch.setattr(sshdriver, "Timeout", lambda timeout: Timeout(min(timeout, 3.0)))
    with pytest.raises(UserError, match=rf"the host key of 127.0.0.1:{farm.ssh_port} is not the one in "
                                        rf"{empty} .*ssh-keyscan -p {farm.ssh_port} 127.0.0.1"):
        TARGETS.get("labgrid", "test")("bbb", farm.options("bbb-1", tmp_path / "w", known_hosts=str(empty)))
    assert farm.holder("bbb-1") is None
    with pytest.raises(UserError, match=r"where.known_hosts: .*/nope does not exist"):
        parse_options({"place": "a", "known_hosts": str(tmp_path / "nope")}, "where")


def test_without_labgrid_installed_the_error_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "labgrid", None)  # what `import labgrid` sees when it is absent
    with pytest.raises(UserError, match=r"labgrid package is not installed.*jitterlab\[labgrid\]"):
        LabgridTarget("b", parse_options({"place": "a"}, "where"))


# -- the whole pipeline on a labgrid place ---------------------------------------------------------


def _campaign(farm: Farm, tmp_path: Path, reps: int = 1, duration: str = "1s") -> Path:
    path = tmp_path / "lg.toml"
    path.write_text(
        f"""
[campaign]
name = "lg"
repetitions = {reps}
duration = "{duration}"
warmup = "20ms"
run_timeout = "20s"
[[target]]
name = "bbb"
kind = "labgrid"
place = "bbb-1"
coordinator = "{farm.coordinator}"
keyfile = "{farm.key}"
workdir = "{tmp_path / "board"}"
[matrix]
benchmark = "squarewave"
impl = ["python"]
period = ["10ms"]
load = ["idle"]
probe = "self"
"""
    )
    return path


@pytest.mark.slow
def test_jitterlab_run_on_a_labgrid_place(farm, tmp_path):
    results = tmp_path / "results"
    assert main(["run", str(_campaign(farm, tmp_path)), "--results", str(results)]) == 0
    [run] = Store(results).runs()
    assert run.status == "ok", run.error
    assert run.metric("n_periods", "self") > 0
    assert farm.holder("bbb-1") is None
    assert processes_mentioning(str(tmp_path / "board")) == []


@pytest.mark.slow
def test_ctrl_c_stops_the_board_s_processes_and_releases_the_place(farm, tmp_path):
    results = tmp_path / "results"
    campaign = _campaign(farm, tmp_path, reps=20, duration="500ms")
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterlab", "run", str(campaign), "--results", str(results)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=_env(),
    )
    try:
        deadline = time.monotonic() + 60
        while not any(results.glob("raw/*.parquet")):
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "no run committed in time"
            time.sleep(0.05)
        time.sleep(0.2)  # mid-run: the program runs on the board
        proc.send_signal(signal.SIGINT)
        assert proc.wait(60) == 130, proc.stderr.read().decode()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        proc.stderr.close()
    assert farm.holder("bbb-1") is None
    assert wait_gone(str(tmp_path / "board"), timeout_s=10) == []
