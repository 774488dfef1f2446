"""An env whose labgrid QEMUDriver cannot be flashed is one line naming what to fix, before anything
boots. The image A/B campaign through QEMUDriver (two boards, B worse, a board whose image does not
boot) runs end to end with labgrid's coordinator and exporter in test_labgrid_farm.py."""

from __future__ import annotations

import shutil

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.ssh.loopback_sshd import free_port
from tests.targets import labgrid_boards

pytest.importorskip("labgrid")
pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or shutil.which("mmdebstrap") is None
    or shutil.which("debugfs") is None,
    reason="qemu-system-arm, mmdebstrap and e2fsprogs are not installed (scripts/install-deps test)")]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("qemu-boards")
    board = labgrid_boards.prepare(tmp / "board")
    a = labgrid_boards.image(board, tmp / "image-A.img")
    env = labgrid_boards.env_file(tmp / "env.yaml", board, {"board1": (a, free_port())})
    return tmp, env, {"A": a}


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
