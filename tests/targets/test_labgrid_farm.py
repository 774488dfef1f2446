"""Image campaigns on a farm board behind a real labgrid coordinator and exporter: the place exports the
board's console as a NetworkSerialPort (raw TCP, read by labgrid's SerialDriver), its power as a
NetworkPowerPort (switched by labgrid's NetworkPowerDriver, model simplerest) and its sshd as a
NetworkService (labgrid's SSHDriver). jitterlab acquires the place for the campaign and releases
it on every path; a place someone else holds is refused naming them.

Image A/B end to end through the same coordinator and exporter: two emulated arm64 boards that
labgrid's QEMUDriver powers, watches and boots, their sshd exported as the NetworkService of a place
each; image B runs a CPU hog service, and `run --until-decided image=A..image=B` adds rounds (each
image booted again) while the verdict is undecided: it must end "worse". The hog's bursts decide
it on the campaign's own 3 runs of each image (of 2 s: see qemu_campaign), so no round boots here;
the rounds themselves are tested on fake boards (tests/execution/test_image_rounds.py). Board 2's
image B does not boot (not a file system): its runs fail with the console's last lines while board
1 goes on.

What is emulated is the hardware a lab buys, in tests/targets/emulated_farm_board.py: the power
switch (HTTP on loopback), the serial line (a TCP port joined to qemu's UART) and the board
itself (jitterlab's emulated arm64 board), plus the board's storage as an image writer
(tests/data/labgrid/board_storage.py: labgrid's USBStorageDriver needs USB storage). Nothing here
asserts a timing."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import time
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.store.catalog import Store
from jitterlab.targets.ssh.loopback_sshd import free_port
from tests.targets import labgrid_boards
from tests.targets.test_labgrid import BIN, Farm, _wait_for

pytest.importorskip("labgrid")
pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or shutil.which("mmdebstrap") is None
    or not (BIN / "labgrid-coordinator").exists(),
    reason="needs qemu-system-arm, mmdebstrap and labgrid (scripts/install-deps test, make setup)")]

EXPORTER = "farmtest"
PLACE = "arm-1"
QEMU_BOARDS = ("board1", "board2")  # booted by labgrid's QEMUDriver; place qemu-<name> exports its sshd
REPETITIONS = 3  # the fewest runs per group a comparison decides with
STORAGE = Path(__file__).parent.parent / "data" / "labgrid" / "board_storage.py"


def _forget_remote_places() -> None:
    """labgrid expands RemotePlaces through one coordinator session per process: the one other
    tests of this process opened is to a coordinator that is gone. Its event loop goes too: labgrid
    would take it up again without making it the current one, which gRPC then asks for."""
    from labgrid.remote import client
    from labgrid.resource.common import ResourceManager
    from labgrid.resource.remote import RemotePlaceManager

    ResourceManager.instances.pop(RemotePlaceManager, None)
    client._loop.set(None)


@pytest.fixture(scope="module")
def farm(tmp_path_factory):
    """coordinator + exporter + the emulated board's hardware; place arm-1 matches its group."""
    root = tmp_path_factory.mktemp("farm")
    board = labgrid_boards.prepare(root / "board")
    images = {"A": labgrid_boards.image(board, root / "image-A.img"),
              "B": labgrid_boards.image(board, root / "image-B.img", hog=True)}
    ports = {"power": free_port(), "serial": free_port(), "ssh": free_port(),
             **{name: free_port() for name in QEMU_BOARDS}}
    storage, uart = root / "storage.img", root / "uart.sock"
    shutil.copyfile(images["B"], storage)  # what the board ran before: the campaign writes image A
    config = root / "board.json"
    config.write_text(json.dumps({
        "qemu_argv": labgrid_boards.qemu_argv(board, storage, ports["ssh"],
                                              f"socket,id=uart,path={uart},reconnect=1"),
        "log": str(root / "board.log"), "power_port": ports["power"], "serial_port": ports["serial"],
        "uart": str(uart)}))
    f = Farm(root)
    _forget_remote_places()
    try:
        hardware = f.start([sys.executable, "-m", "tests.targets.emulated_farm_board", str(config)],
                           root / "hardware.log", cwd=Path(__file__).parent.parent.parent)
        _wait_for("the emulated board", uart.exists, hardware, root / "hardware.log")
        (root / "coordinator").mkdir()
        log = root / "coordinator.log"
        coordinator = f.start([str(BIN / "labgrid-coordinator"), "-l", "127.0.0.1:0"], log,
                              cwd=root / "coordinator")
        f.coordinator = _wait_for("labgrid-coordinator", lambda: next(
            (line.removeprefix("listening on ") for line in log.read_text(errors="replace").splitlines()
             if line.startswith("listening on 127.0.0.1:")), None), coordinator, log)
        (root / "exporter.yaml").write_text(f"""board1:
  NetworkSerialPort:
    host: 127.0.0.1
    port: {ports["serial"]}
    speed: 115200
    protocol: raw
  NetworkPowerPort:
    model: simplerest
    host: http://127.0.0.1:{ports["power"]}/relay/{{index}}/{{value}}
    index: 0
  NetworkService:
    address: 127.0.0.1
    port: {ports["ssh"]}
    username: root
""" + "".join(f"""qemu-{name}:
  NetworkService:
    address: 127.0.0.1
    port: {ports[name]}
    username: root
""" for name in QEMU_BOARDS))
        log = root / "exporter.log"
        exporter = f.start([str(BIN / "labgrid-exporter"), "-c", f.coordinator, "--name", EXPORTER,
                            str(root / "exporter.yaml")], log)
        _wait_for("labgrid-exporter", lambda: f"{EXPORTER}/board1/NetworkService" in f.client(
            "resources", check=False), exporter, log)
        f.client("-p", PLACE, "create")
        f.client("-p", PLACE, "add-match", f"{EXPORTER}/board1/*")
        for name in QEMU_BOARDS:
            f.client("-p", f"qemu-{name}", "create")
            f.client("-p", f"qemu-{name}", "add-match", f"{EXPORTER}/qemu-{name}/*")
        f.qemu_ports = {name: ports[name] for name in QEMU_BOARDS}
        yield f, board, images, storage, root
    finally:
        f.stop()  # the hardware's SIGTERM powers the board off
        _forget_remote_places()


def qemu_env(path: Path, f: Farm, board: labgrid_boards.Board, image: Path) -> Path:
    """labgrid's QEMUDriver env of the QEMU boards (labgrid-board's), each board's sshd reached through
    the NetworkService its place exports instead of one the env names."""
    env = labgrid_boards.env_file(path, board, {name: (image, f.qemu_ports[name]) for name in QEMU_BOARDS})
    text = env.read_text()
    for name in QEMU_BOARDS:
        local = (f"    resources:\n      NetworkService:\n        address: 127.0.0.1\n        port: "
                 f"{f.qemu_ports[name]}\n        username: root\n")
        assert local in text
        text = text.replace(local, f"    resources:\n      RemotePlace:\n        name: qemu-{name}\n", 1)
    path.write_text(text + f"options:\n  coordinator_address: {f.coordinator}\n")
    return path


def qemu_campaign(path: Path, env: Path, images: dict[str, Path]) -> Path:
    table = {"board1": f'{{ "A" = "{images["A"]}", "B" = "{images["B"]}" }}',
             "board2": f'{{ "A" = "{images["A"]}", "B" = "{images["broken"]}" }}'}
    targets = "".join(f"""
[[target]]
name = "{name}"
kind = "labgrid"
env = "{env}"
role = "{name}"
images = {table[name]}
cc = "aarch64-linux-gnu-gcc"
boot_prompt = "{labgrid_boards.READY}"
boot_timeout = "240s"
""" for name in QEMU_BOARDS)
    # 2 s: the hog's bursts last about 0.5 s on the emulated board, one a second, and a burst that
    # falls in a run's warm-up is dropped with it; 2 of 8 runs of 1 s of image B then had no late
    # period at all, which left the verdict open for rounds of two boots each (490 s in a CI run)
    path.write_text(f"""[campaign]
name = "ab"
repetitions = {REPETITIONS}
duration = "2s"
warmup = "60ms"
run_timeout = "120s"
{targets}
[matrix]
impl = "c-file"
period = "20ms"
probe = "self"
""")
    return path


def test_image_b_is_worse_until_decided_through_coordinator_exporter_and_qemudriver(farm, tmp_path, capsys):
    f, board, images, _, _ = farm
    broken = tmp_path / "image-B-broken.img"
    broken.write_bytes(b"\0" * (1 << 20))  # no file system: the board's init cannot mount its root
    env = qemu_env(tmp_path / "env.yaml", f, board, images["A"])
    path = qemu_campaign(tmp_path / "ab.toml", env, {**images, "broken": broken})
    results = tmp_path / "r"
    started = time.monotonic()
    # watched: the worst period, which B's 200 ms bursts stretch tenfold or more: beyond what an
    # emulated CPU's own stalls (tens of ms on a busy host) do to A's
    rc = main(["run", str(path), "--results", str(results), "--until-decided", "image=A..image=B",
               "--watch", "max_rel_period_error", "--max-runs", "8"])
    seconds = time.monotonic() - started
    out, err = capsys.readouterr()
    assert rc == 1, (out, err)  # board 2's image B does not boot: its runs fail
    assert all(f.holder(f"qemu-{name}") is None for name in QEMU_BOARDS)  # released at the end
    store = Store(results, create=False)
    runs = store.runs()
    by: dict[tuple[str, str], list] = {}
    for r in runs:
        by.setdefault((r.target, r.labels["image"]), []).append(r)
    assert sorted(by) == [("board1", "A"), ("board1", "B"), ("board2", "A"), ("board2", "B")]
    for key in (("board1", "A"), ("board1", "B"), ("board2", "A")):
        statuses = [r.status for r in by[key]]
        if key[1] == "B":
            # the hog may starve the program for a whole run on an emulated board whose host is busy:
            # such a run is honestly unmeasurable (too few edges), never failed or fake
            assert set(statuses) <= {"ok", "unmeasurable"} and "ok" in statuses, [r.error for r in by[key]]
            assert all("edges" in r.error for r in by[key] if r.status == "unmeasurable")
        else:
            assert set(statuses) == {"ok"}, [r.error for r in by[key]]
        info = store.sysinfo(by[key][0].sysinfo_id).as_json()  # as stored
        assert info["image"] == str(images[key[1]]) and len(info["image_sha256"]) == 64
        assert info["console_boot_s"] > 0 and info["machine"] == "aarch64"
    # a round boots each image again on the boards whose cells gain runs: board 1's groups stay even
    assert len(by[("board1", "A")]) == len(by[("board1", "B")]) >= REPETITIONS
    failed = by[("board2", "B")]
    assert [r.status for r in failed] == ["failed"] * REPETITIONS  # no row to decide: no round boots it
    said = "image-B-broken.img: no '@@jitterlab-ready' on the console before the emulator ended"
    assert said in failed[0].error
    assert "@@jitterlab-init-failed ext4 /lower" in failed[0].error
    # the run ends on its answer, and compare reads the same verdict from the store
    assert "--until-decided image=A..image=B: every watched verdict is decided after" in out, out
    assert main(["compare", "--results", str(results), "--baseline", "image=A", "--candidate", "image=B",
                 "--metric", "max_rel_period_error", "--no-pooled", "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    [row] = [r for r in rows if r["cell"].get("target", "board1") == "board1"]
    with capsys.disabled():
        print(f"\ncoordinator + exporter + QEMUDriver, image B vs A on board1: {row['verdict']}, ratio "
              f"{row['ratio']}, p {row['p_adjusted']}, {row['n_baseline']} vs {row['n_candidate']} runs; "
              f"{seconds:.0f} s")
    assert row["verdict"] == "worse", row


def env_file(path: Path, f: Farm, board: labgrid_boards.Board, storage: Path, *, power: bool = True) -> Path:
    drivers = ["      NetworkPowerDriver: {}"] if power else []
    drivers += ["      SerialDriver: {}", f"      BoardStorageWriter:\n        path: {storage}",
                f"      SSHDriver:\n        keyfile: {board.client_key}\n        connection_timeout: 60.0"]
    path.write_text("targets:\n  main:\n    resources:\n      RemotePlace:\n"
                    f"        name: {PLACE}\n    drivers:\n" + "\n".join(drivers) +
                    f"\noptions:\n  coordinator_address: {f.coordinator}\nimports:\n  - {STORAGE}\n")
    return path


def campaign(path: Path, env: Path, images: dict[str, Path]) -> Path:
    table = ", ".join(f'"{k}" = "{v}"' for k, v in images.items())
    path.write_text(f"""[campaign]
name = "farm-ab"
repetitions = 1
duration = "500ms"
warmup = "60ms"
run_timeout = "120s"
[[target]]
name = "arm-1"
kind = "labgrid"
env = "{env}"
cc = "aarch64-linux-gnu-gcc"
images = {{ {table} }}
boot_prompt = "{labgrid_boards.READY}"
boot_timeout = "240s"
[matrix]
impl = "c-file"
period = "20ms"
probe = "self"
""")
    return path


def test_each_image_is_written_powered_watched_and_measured_through_the_place(farm, tmp_path):
    f, board, images, storage, root = farm
    shown = f.client("-p", PLACE, "show")
    assert all(cls in shown for cls in ("NetworkSerialPort", "NetworkPowerPort", "NetworkService"))
    env = env_file(tmp_path / "env.yaml", f, board, storage)
    results = tmp_path / "r"
    # one image: the A/B comparison itself is test_labgrid_qemu.py's (each image costs a boot and
    # the emulated board's slow preflight)
    path = campaign(tmp_path / "ab.toml", env, {"A": images["A"]})
    assert main(["run", str(path), "--results", str(results)]) == 0
    assert f.holder(PLACE) is None  # released at the end
    store = Store(results, create=False)
    [run] = store.runs()
    assert run.status == "ok" and run.labels["image"] == "A", run.error
    info = store.sysinfo(run.sysinfo_id).as_json()  # as stored
    assert info["image"] == str(images["A"]) and info["machine"] == "aarch64"
    assert info["console_boot_s"] > 0  # the boot prompt was read through the exported serial port
    # the power switch was driven through the exported NetworkPowerPort
    assert (root / "board.log").read_text().count("power on") == 1
    assert _sha256(storage) == info["image_sha256"] != _sha256(images["B"])  # written before power-on


def test_a_place_held_by_someone_else_is_refused_naming_them(farm, tmp_path, capsys):
    f, board, images, storage, _ = farm
    env = env_file(tmp_path / "env.yaml", f, board, storage)
    f.client("-p", PLACE, "acquire", user="alice")
    try:
        rc = main(["run", str(campaign(tmp_path / "ab.toml", env, images)), "--results", str(tmp_path / "r")])
        err = capsys.readouterr().err
        assert rc == 2
        assert f"place '{PLACE}' is acquired by lab-pc/alice" in err
        assert f.holder(PLACE) == "lab-pc/alice"
    finally:
        f.client("-p", PLACE, "release", user="alice")


def test_a_place_without_a_power_driver_is_one_line_and_released(farm, tmp_path, capsys):
    f, board, images, storage, _ = farm
    env = env_file(tmp_path / "env.yaml", f, board, storage, power=False)
    rc = main(["run", str(campaign(tmp_path / "ab.toml", env, images)), "--results", str(tmp_path / "r")])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2
    assert err[-1] == ("error: target 'arm-1' (labgrid): the board has no power driver (PowerProtocol); add "
                       "one to its env or place (QEMUDriver, ExternalPowerDriver, NetworkPowerDriver)")
    assert f.holder(PLACE) is None

def _sha256(path: Path) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def test_a_remote_place_on_a_second_coordinator_is_one_line(farm, tmp_path):
    from jitterlab.model.errors import UserError
    from jitterlab.targets.registry import TARGETS

    f, board, images, storage, _ = farm
    env = env_file(tmp_path / "env.yaml", f, board, storage)
    options = {"env": str(env), "images": {"A": str(images["A"])}}
    TARGETS.get("labgrid", "test")("arm-1", options).close()  # labgrid now reaches places through f
    other = tmp_path / "other.yaml"
    other.write_text(env.read_text().replace(f.coordinator, "127.0.0.1:1"))
    with pytest.raises(UserError, match=r"its RemotePlace is on the coordinator 127.0.0.1:1, but labgrid "
                                        rf"already reaches RemotePlaces through {f.coordinator} in this "
                                        r"process \(one coordinator per process\); measure"):
        TARGETS.get("labgrid", "test")("arm-2", {**options, "env": str(other)})
    assert f.holder(PLACE) is None
