"""A matrix of several impls and pins pairs each impl with the pins it drives (what they declare,
measure/squarewave/bindings.py): no [[exclude]] needed, --dry-run says what was paired and left
out, and a pin (or impl) the user named that nothing pairs with is still refused, in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.model.errors import UserError

EXAMPLES = Path(__file__).parent.parent / "examples"
BOARD_PINS = """
[campaign]
name = "p"
duration = "1s"
[matrix]
impl = {impls}
period = "10ms"
probe = "self"
pin = {pins}
[pins.sysfs]
line = 2
[pins.gpiod]
line = 2
[pins.gpiomem]
soc = "pl061"
line = 2
"""
# what examples/arm-board.toml said before the pairing, in three rules
THREE_EXCLUDES = """
[[exclude]]
impl = ["bash", "python", "node", "c-file"]
pin = ["gpiod", "gpiomem"]
[[exclude]]
impl = ["c-gpiod", "kmod-busy", "kmod-hrtimer", "kmod-rt"]
pin = ["sysfs", "gpiomem"]
[[exclude]]
impl = ["c-mmap", "c-fifo"]
pin = ["sysfs", "gpiod"]
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "c.toml"
    path.write_text(text)
    return path


def pairs(path: Path) -> list[tuple[str, str]]:
    return [(c.param("impl"), c.param("pin")) for c in load_campaign(path).cells]


def test_each_impl_meets_the_pins_it_drives_and_dry_run_says_what_was_left_out(tmp_path, capsys):
    path = write(tmp_path, BOARD_PINS.format(impls='["bash", "c-gpiod", "c-mmap", "python"]',
                                             pins='["sysfs", "gpiod", "gpiomem"]'))
    assert pairs(path) == [("bash", "sysfs"), ("c-gpiod", "gpiod"), ("c-mmap", "gpiomem"),
                           ("python", "sysfs"), ("python", "gpiod")]
    assert load_campaign(path).pairing == (
        "matrix: each impl on the pins it drives: bash on sysfs; c-gpiod on gpiod; c-mmap on gpiomem; python "
        "on sysfs, gpiod",
        "matrix: left out, 7 cells of an impl on a pin it cannot drive: bash on gpiod, gpiomem; c-gpiod on "
        "sysfs, gpiomem; c-mmap on sysfs, gpiod; python on gpiomem")
    assert main(["run", str(path), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "matrix: each impl on the pins it drives: bash on sysfs;" in out
    assert "matrix: left out, 7 cells of an impl on a pin it cannot drive: bash on gpiod, gpiomem;" in out
    assert "\n15 runs, estimated" in out  # 5 cells x 3 repetitions


def test_a_matrix_that_pairs_everything_says_nothing_of_it(tmp_path):
    path = write(tmp_path, BOARD_PINS.format(impls='["bash", "python"]', pins='"sysfs"'))
    assert pairs(path) == [("bash", "sysfs"), ("python", "sysfs")]
    assert load_campaign(path).pairing == ()


def test_the_arm_board_example_keeps_the_cells_its_three_excludes_gave():
    text = (EXAMPLES / "arm-board.toml").read_text()
    assert "[[exclude]]\nimpl = [\"c-mmap\"" not in text, "the example relies on the pairing"
    new = load_campaign(EXAMPLES / "arm-board.toml")
    old_path = EXAMPLES.parent / "examples" / "arm-board.toml"
    old = load_campaign(_with(old_path, THREE_EXCLUDES))
    assert new.cells == old.cells and new.fingerprint == old.fingerprint
    assert old.pairing == (), "excludes that say it all leave nothing to pair (and still match cells)"
    assert new.pairing[0] == ("matrix: each impl on the pins it drives: bash, python, node, c-file on sysfs; "
                              "c-gpiod, kmod-busy, kmod-hrtimer, kmod-rt on gpiod; c-mmap, c-fifo on gpiomem")


def _with(path: Path, extra: str) -> Path:
    out = Path(__import__("tempfile").mkdtemp()) / path.name
    out.write_text(path.read_text() + extra)
    return out


@pytest.mark.parametrize(("impls", "pins", "says"), [
    ('["bash", "c-file"]', '["sysfs", "gpiomem"]',
     "matrix.pin: no impl of the matrix (bash, c-file) can drive pin 'gpiomem'; add an impl that drives it "
     "to matrix.impl (c-fifo, c-mmap) or remove it from matrix.pin"),
    ('"c-gpiod"', '"sysfs"',
     "matrix.pin: impl 'c-gpiod' cannot drive pin 'sysfs': it needs a GPIO line to request from "
     "/dev/gpiochipN, which pin gpiod offers; add an impl that drives it to matrix.impl (bash, c-file, node, "
     "python) or remove it from matrix.pin"),
    ('["bash", "c-gpiod"]', '"sysfs"',
     "matrix.impl: impl 'c-gpiod' cannot drive pin 'sysfs': it needs a GPIO line to request from "
     "/dev/gpiochipN, which pin gpiod offers; add a pin it drives to matrix.pin or remove 'c-gpiod' from "
     "matrix.impl"),
    ('["bash", "kmod-rt"]', '["sysfs", "gpiomem"]',
     "matrix.pin: no impl of the matrix (bash, kmod-rt) can drive pin 'gpiomem'"),
    ('["c-mmap", "kmod-rt"]', '["gpiomem", "vpin"]',
     "matrix.impl: impl 'kmod-rt' cannot drive any of the matrix's pins (gpiomem, vpin): it needs a GPIO "
     "line the kernel can find by chip label and offset, which pin gpiod offers"),
])
def test_a_pin_or_impl_that_nothing_pairs_with_is_refused(tmp_path, impls, pins, says):
    with pytest.raises(UserError) as refused:
        load_campaign(write(tmp_path, BOARD_PINS.format(impls=impls, pins=pins)))
    assert f"c.toml: {says}" in str(refused.value) and "\n" not in str(refused.value), str(refused.value)


def test_what_the_user_excluded_is_not_paired_again_nor_refused(tmp_path):
    text = BOARD_PINS.format(impls='["bash", "c-mmap"]', pins='["sysfs", "gpiomem"]')
    path = write(tmp_path, text + '[[exclude]]\nimpl = "c-mmap"\n')
    # the matrix names an impl for gpiomem, which the user's rule drops: not refused, bash left out
    assert pairs(path) == [("bash", "sysfs")]
    assert load_campaign(path).pairing == ("matrix: each impl on the pins it drives: bash on sysfs",
                                           "matrix: left out, 1 cell of an impl on a pin it cannot drive: "
                                           "bash on gpiomem")


def test_a_pin_the_user_excluded_altogether_is_not_refused(tmp_path):
    text = BOARD_PINS.format(impls='["bash"]', pins='["sysfs", "gpiomem"]')
    assert pairs(write(tmp_path, text + '[[exclude]]\npin = "gpiomem"\n')) == [("bash", "sysfs")]


def test_each_matrix_table_pairs_its_own(tmp_path):
    text = BOARD_PINS.replace("[matrix]", "[[matrix]]").format(impls='["bash", "c-mmap"]',
                                                                  pins='["sysfs", "gpiomem"]')
    text += '[[matrix]]\nimpl = "c-gpiod"\nperiod = "10ms"\nprobe = "self"\npin = "gpiod"\n'
    campaign = load_campaign(write(tmp_path, text))
    assert [(c.param("impl"), c.param("pin")) for c in campaign.cells] == [
        ("bash", "sysfs"), ("c-mmap", "gpiomem"), ("c-gpiod", "gpiod")]
    assert [line.split(":")[0] for line in campaign.pairing] == ["matrix[0]", "matrix[0]"]
