"""Image A/B through labgrid's own QEMUDriver: two emulated arm64 boards (jitterlab's ARM board, as
tests/targets/labgrid_boards.py makes it) in one labgrid environment, each powered, watched and
booted by the driver's PowerProtocol and ConsoleProtocol, reached by labgrid's SSHDriver. One
`jitterlab run` flashes each image (points the driver's disk at it), boots, measures and records
the boot; `jitterlab compare` judges image B (a CPU hog service) against image A. Board 2's image B
does not boot (not a file system): its runs fail with the console's last lines while board 1 goes
on. Emulated CPUs on a shared machine: nothing here asserts a timing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.ssh.loopback_sshd import free_port
from tests.targets import labgrid_boards

pytest.importorskip("labgrid")
pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or shutil.which("mmdebstrap") is None
    or shutil.which("debugfs") is None,
    reason="qemu-system-arm, mmdebstrap and e2fsprogs are not installed (scripts/install-deps test)")]

REPETITIONS = 3  # the fewest runs per group a comparison decides with


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qemu-boards")
    board = labgrid_boards.prepare(tmp / "board")
    a = labgrid_boards.image(board, tmp / "image-A.img")
    b = labgrid_boards.image(board, tmp / "image-B.img", hog=True)
    broken = tmp / "image-B-broken.img"
    broken.write_bytes(b"\0" * (1 << 20))  # no file system: the board's init cannot mount its root
    env = labgrid_boards.env_file(tmp / "env.yaml", board, {"board1": (a, free_port()),
                                                            "board2": (a, free_port())})
    return tmp, env, {"A": a, "B": b, "broken": broken}


def campaign(tmp: Path, env: Path, images: dict[str, Path]) -> Path:
    path = tmp / "ab.toml"
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
""" for name in ("board1", "board2"))
    path.write_text(f"""[campaign]
name = "ab"
repetitions = {REPETITIONS}
duration = "1s"
warmup = "60ms"
run_timeout = "120s"
{targets}
[matrix]
impl = "c-file"
period = "20ms"
probe = "self"
""")
    return path


@pytest.fixture(scope="module")
def measured(lab):
    tmp, env, images = lab
    results = tmp / "r"
    rc = main(["run", str(campaign(tmp, env, images)), "--results", str(results)])
    assert rc == 1  # board 2's image B does not boot: its runs fail
    return results


def test_each_image_is_flashed_booted_and_measured_on_both_boards(measured, lab):
    _, _, images = lab
    store = Store(measured, create=False)
    runs = store.runs()
    by = {(r.target, r.labels["image"]): [x for x in runs if (x.target, x.labels["image"]) ==
                                          (r.target, r.labels["image"])] for r in runs}
    assert sorted(by) == [("board1", "A"), ("board1", "B"), ("board2", "A"), ("board2", "B")]
    for key in (("board1", "A"), ("board1", "B"), ("board2", "A")):
        statuses = [r.status for r in by[key]]
        if key[1] == "B":
            # the hog image may starve the program for a whole run on an emulated board whose host is
            # busy: such a run is honestly unmeasurable (too few edges), never failed or fake
            assert set(statuses) <= {"ok", "unmeasurable"} and "ok" in statuses, [r.error for r in by[key]]
            assert all("edges" in r.error for r in by[key] if r.status == "unmeasurable")
        else:
            assert statuses == ["ok"] * REPETITIONS, [r.error for r in by[key]]
        info = store.sysinfo(by[key][0].sysinfo_id).as_json()  # as stored
        assert info["image"] == str(images[key[1]]) and len(info["image_sha256"]) == 64
        assert info["console_boot_s"] > 0 and info["machine"] == "aarch64"
    hogged = store.sysinfo(by[("board1", "B")][0].sysinfo_id).as_json()
    other = store.sysinfo(by[("board1", "A")][0].sysinfo_id).as_json()
    assert hogged["image_sha256"] != other["image_sha256"]
    failed = by[("board2", "B")]
    assert [r.status for r in failed] == ["failed"] * REPETITIONS
    # the console's last lines say why: jitterlab's init could not mount the image's root
    said = "image-B-broken.img: no '@@jitterlab-ready' on the console before the emulator ended"
    assert said in failed[0].error
    assert "@@jitterlab-init-failed ext4 /lower" in failed[0].error


def test_compare_decides_between_the_images(measured, capsys):
    assert main(["compare", "--results", str(measured), "--baseline", "image=A", "--candidate", "image=B",
                 "--metric", "max_rel_period_error", "--no-pooled", "--format", "json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    [row] = [r for r in doc["rows"] if r["cell"].get("target", "board1") == "board1"]
    measured_b = [r for r in Store(measured, create=False).runs()
                  if (r.target, r.labels["image"], r.status) == ("board1", "B", "ok")]
    assert (row["n_baseline"], row["n_candidate"]) == (REPETITIONS, len(measured_b))
    assert row["verdict"] in ("better", "worse", "same", "undecided")
    print(f"image B vs A on board1: {row['verdict']}, ratio {row['ratio']}, CI [{row['ci_low']}, "
          f"{row['ci_high']}], p {row['p_adjusted']}")


def test_an_env_without_the_image_key_is_one_line(lab, tmp_path):
    _, env, images = lab
    text = env.read_text().replace("        disk: disk-board1\n", "")
    (tmp_path / "env.yaml").write_text(text)
    options = {"env": str(tmp_path / "env.yaml"), "role": "board1", "images": {"A": str(images["A"])}}
    target = TARGETS.get("labgrid", "test")("board1", options)
    try:
        with pytest.raises(UserError, match=r"^target 'board1' \(labgrid\): its QEMUDriver has no disk key, "
                                            r"so an image campaign has nothing to flash; add disk: NAME"):
            target.install(str(images["A"]), labgrid_boards.READY, 10.0)
    finally:
        target.close()
    (tmp_path / "env.yaml").write_text(env.read_text().replace("  kernel: /", "  kernel: /nonexistent/"))
    target = TARGETS.get("labgrid", "test")("board1", options)
    try:
        with pytest.raises(UserError, match=r"images.kernel: /nonexistent/.* does not exist \(its "
                                            r"QEMUDriver's kernel\); fix the path in the env file$"):
            target.install(str(images["A"]), labgrid_boards.READY, 10.0)
    finally:
        target.close()
