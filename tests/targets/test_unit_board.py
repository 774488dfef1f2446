"""The unit beside an emulated ARM board: qemu's arm64 `virt` (Debian's arm64 kernel, the board's own
root, over SSH) gets a `pci-serial` port whose other end is the emulated lm3s6965evb unit's UART;
the board's Linux sees it as /dev/ttyS0 (8250_pci is built into Debian's kernel) and the unit's
control program, cross-built for the board like every program, commands the unit over it. The
emulator probe reads the unit's GPIO trace on this machine. The same code path as on a real board
with an MCU on a serial line, but for how the firmware gets onto the unit.

Budget: the board boots in about a minute under TCG (its root and kernel come from the cache, built
once by the other board tests); one 2 s run; about 2 minutes in all. Emulated CPU and unit: the
assertions are about edges and counts, never timing."""

from __future__ import annotations

import shutil

import pytest

from jitterlab.cli.main import main
from jitterlab.programs.unit import TOOLCHAIN
from jitterlab.store.catalog import Store
from tests.support import wait_gone

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-aarch64") is None or shutil.which("mmdebstrap") is None
    or shutil.which(TOOLCHAIN[0]) is None,
    reason="qemu-system-arm, mmdebstrap and gcc-arm-none-eabi are not installed "
           "(scripts/install-deps test)")]


def test_the_unit_wired_to_an_emulated_board_makes_every_edge_it_counts(tmp_path, units_here):
    path = tmp_path / "unit-board.toml"
    path.write_text("""[campaign]
name = "unit-board"
repetitions = 1
duration = "2s"
warmup = "200ms"
[[target]]
name = "board"
kind = "qemu"
machine = "virt-arm64"
unit = {kind = "emulated", profile = "lm3s6965evb"}
[matrix]
impl = "unit"
pin = "unit"
probe = "emulator"
period = "100ms"
[pins.unit]
chatter = "50ms"
""")
    results = tmp_path / "r"
    assert main(["run", str(path), "--results", str(results)]) == 0
    store = Store(results, create=False)
    [run] = store.runs()
    info = store.sysinfo(run.sysinfo_id).as_json()  # as stored
    assert (info["vm_accel"], info["vm_machine"], info["unit_kind"], info["unit_tty"]) == (
        "tcg", "virt-arm64", "emulated", "/dev/ttyS0")
    counted, seen = run.metric("counted_edges", "emulator"), run.metric("seen_edges", "emulator")
    assert counted == seen and counted >= 20, "every edge the probe saw is one the firmware counted"
    assert run.metric("program_pin_watched", "emulator") == 1.0 and run.metric("chatter_rtt_samples", "") > 0
    print(f"board: {int(counted)} edges counted and seen, mean period "
          f"{run.metric('mean_period_ns', 'emulator') / 1e6:.3f} ms, chatter p50 "
          f"{run.metric('chatter_rtt_p50_ns', '') / 1e3:.0f} us, boot {info['vm_boot_s']:.0f} s")
    assert wait_gone(f"{units_here}/jl-unit-") == [], "the unit's qemu ends with the board"
