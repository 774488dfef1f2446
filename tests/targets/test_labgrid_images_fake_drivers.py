"""An image campaign on a labgrid board of fake drivers (tests/data/labgrid/fake_board.py: labgrid's
own machinery, drivers that stand in for the hardware): each image written, the board powered, the
boot timed on the console, the cells measured with the image's label; a board that does not boot
fails only its runs of that image; the commands printed after the run run as printed."""

from __future__ import annotations

import getpass
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store
from jitterlab.targets.images import split_image_options

pytest.importorskip("labgrid")
DRIVERS = Path(__file__).parent.parent / "data" / "labgrid" / "fake_board.py"


def env_file(path: Path, sshd) -> Path:
    path.write_text(f"""targets:
  main:
    resources:
      NetworkService:
        address: 127.0.0.1
        port: {sshd.port}
        username: {getpass.getuser()}
    drivers:
      FakeBoardPower: {{}}
      FakeImageWriter: {{}}
      FakeBootConsole: {{}}
      SSHDriver:
        keyfile: {sshd.client_key}
imports:
  - {DRIVERS}
""")
    return path


def campaign(tmp_path: Path, env: Path, images: dict[str, Path]) -> Path:
    table = ", ".join(f'"{k}" = "{v}"' for k, v in images.items())
    path = tmp_path / "ab.toml"
    path.write_text(f"""[campaign]
name = "ab"
repetitions = 1
duration = "200ms"
warmup = "20ms"
[[target]]
name = "bbb"
kind = "labgrid"
env = "{env}"
workdir = "{tmp_path / 'w'}"
images = {{ {table} }}
boot_timeout = "20s"
[matrix]
impl = "python"
period = "10ms"
probe = "self"
""")
    return path


def hints(out: str) -> dict[str, list[str]]:
    """The commands the run printed after its tables, by what they are for, split as a shell would."""
    import shlex

    found = {}
    for line in out.splitlines():
        for what in ("compare the images: ", "measure the failed runs again: "):
            if line.startswith(what):
                found[what.split(":")[0]] = shlex.split(line[len(what):].split(" (")[0])
    return found


def test_each_image_is_flashed_booted_and_measured_on_fake_drivers(sshd, tmp_path, monkeypatch, capsys):
    log = tmp_path / "board.log"
    monkeypatch.setenv("JITTERLAB_FAKE_BOARD_LOG", str(log))
    images = {v: tmp_path / f"bbb-{v}.img" for v in ("1.9", "1.10")}
    for p in images.values():
        p.write_bytes(b"image " + p.name.encode())
    path = campaign(tmp_path, env_file(tmp_path / "env.yaml", sshd), images)
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 0
    steps = log.read_text().splitlines()
    assert steps == ["power off", f"write {images['1.9']}", "power on",  # natural order: 1.9 first
                     "power off", f"write {images['1.10']}", "power on"]
    store = Store(tmp_path / "r", create=False)
    runs = store.runs()
    assert sorted(r.labels["image"] for r in runs) == ["1.10", "1.9"] and {r.status for r in runs} == {"ok"}
    infos = [store.sysinfo(r.sysinfo_id).as_json() for r in runs]  # as stored
    assert {Path(i["image"]).name for i in infos} == {"bbb-1.9.img", "bbb-1.10.img"}
    assert all(i["console_boot_s"] >= 0 and len(i["image_sha256"]) == 64 for i in infos)
    out = capsys.readouterr().out
    # the unverified host key is said before the first image is flashed, as the README says
    warned = out.index("bbb: warning: the board's SSH host key is not verified")
    assert warned < out.index("image=1.9: flashing and booting")
    # the hint runs as printed: the two images measured, compared
    found = hints(out)
    assert list(found) == ["compare the images"]
    assert found["compare the images"][-4:] == ["--baseline", "image=1.9", "--candidate", "image=1.10"]
    assert main(found["compare the images"][1:]) == 0


def test_a_board_of_fake_drivers_that_does_not_boot_fails_its_runs_of_that_image(sshd, tmp_path, monkeypatch,
                                                                                   capsys):
    monkeypatch.setenv("JITTERLAB_FAKE_BOARD_LOG", str(tmp_path / "board.log"))
    images = {"1.10": tmp_path / "good.img", "1.11": tmp_path / "broken.img"}
    for p in images.values():
        p.write_bytes(b"x")
    path = campaign(tmp_path, env_file(tmp_path / "env.yaml", sshd), images)
    path.write_text(path.read_text().replace('boot_timeout = "20s"', 'boot_timeout = "2s"'))
    assert main(["run", str(path), "--results", str(tmp_path / "r")]) == 1
    runs = {r.labels["image"]: r for r in Store(tmp_path / "r", create=False).runs()}
    assert runs["1.10"].status == "ok"
    assert runs["1.11"].status == "failed"
    assert "broken.img: no 'login: |@@jitterlab-ready' on the console" in runs["1.11"].error
    assert "Kernel panic" in runs["1.11"].error  # the console's last words say why
    out = capsys.readouterr().out
    assert "--resume --retry-failed" not in out  # an image campaign refuses it
    assert "(run the campaign again: an image campaign measures every image afresh)" in out
    found = hints(out)  # one image with runs: nothing to compare it with
    assert list(found) == ["measure the failed runs again"]
    assert main(found["measure the failed runs again"][1:]) == 1  # as printed: measured again, 1.11 fails
    again = Store(tmp_path / "r", create=False).runs()
    assert sorted(r.labels["image"] for r in again) == ["1.10", "1.10", "1.11", "1.11"]


def test_image_options_are_checked_when_the_campaign_is_read(tmp_path):
    image = tmp_path / "a.img"
    image.write_bytes(b"x")
    rest, images = split_image_options({"env": "e.yaml", "images": {"1.0": str(image)},
                                        "boot_timeout": "30s"}, "c.toml: target[0]")
    assert rest == {"env": "e.yaml"} and images.images == (("1.0", str(image)),)
    assert images.boot_timeout_s == 30.0 and images.label == "image"
    for options, expected in (
        ({"images": {"1.0": str(tmp_path / "nope.img")}}, r"images.1.0: .*nope.img does not exist"),
        ({"images": "a.img"}, r"images: expected a table of label value = image file"),
        ({"boot_prompt": "x"}, r"boot_prompt: goes with images"),
        ({"images": {"1": str(image)}, "boot_prompt": "(["}, r"boot_prompt: not a regular expression"),
        ({"images": {"1": str(image)}, "image_label": "a b"}, r"image_label: expected a label key"),
        # an image's key is the runs' label value: the label rules hold
        ({"images": {"": str(image)}}, r"images \(a value of the label 'image'\): a label has a value"),
        ({"images": {"x\x1b[2Jy": str(image)}}, r"images \(a value of the label 'image'\): expected one "
                                                r"line of printable text of at most 200 characters, got "
                                                r"'x\\x1b\[2Jy'$"),
        ({"images": {"v" * 300: str(image)}}, r"images \(a value of the label 'image'\): expected one line"),
        # a prompt that matches empty text would not wait for the boot
        ({"images": {"1": str(image)}, "boot_prompt": ""}, r"boot_prompt: '' matches empty text, so the "
                                                           r"boot would not be waited for; give what"),
        ({"images": {"1": str(image)}, "boot_prompt": "(login)?"}, r"boot_prompt: '\(login\)\?' matches"),
        ({"images": {"1": str(image)}, "boot_prompt": 5}, r"boot_prompt: expected a regular expression of "
                                                          r"at most 200 characters, e.g. boot_prompt = "
                                                          r"\"login: \"; got 5$"),
    ):
        with pytest.raises(UserError, match=f"^c.toml: target\\[0\\].{expected}"):
            split_image_options(options, "c.toml: target[0]")


def test_a_board_without_a_console_driver_is_one_line(sshd, tmp_path, monkeypatch):
    from jitterlab.targets.registry import TARGETS

    monkeypatch.setenv("JITTERLAB_FAKE_BOARD_LOG", str(tmp_path / "board.log"))
    env = env_file(tmp_path / "env.yaml", sshd)
    env.write_text(env.read_text().replace("      FakeBootConsole: {}\n", ""))
    image = tmp_path / "a.img"
    image.write_bytes(b"x")
    target = TARGETS.get("labgrid", "test")("bbb", {"env": str(env), "images": {"1.0": str(image)}})
    try:
        with pytest.raises(UserError) as info:
            target.install(str(image), "login: ", 5.0)
    finally:
        target.close()
    assert str(info.value) == (
        "target 'bbb' (labgrid): the board has no console driver (ConsoleProtocol); add one to its env or "
        "place (QEMUDriver, SerialDriver on a NetworkSerialPort)")
    assert not (tmp_path / "board.log").exists()  # refused before anything was powered or written
