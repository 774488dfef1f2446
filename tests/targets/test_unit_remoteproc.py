"""A remoteproc core, loaded and put back, on this machine against a directory that plays the
kernel's /sys/class/remoteproc (a thread turns "start" into "running" and makes the core's tty, as
the kernel and rpmsg_tty do): what ran before comes back on every path, a core busy with another
firmware is refused unless the campaign lets jitterlab replace it, and what a killed jitterlab
left is put back by the next one."""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path

import pytest

from jitterlab.model.errors import RunFailed
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.unit import firmware, remoteproc
from jitterlab.targets.unit.target import UnitTarget, loader_for, read_unit


class FakeKernel:
    """remoteprocN directories whose state file obeys "start" and "stop" like the kernel's."""

    def __init__(self, root: Path, tty: Path) -> None:
        self.root, self.tty, self.fw_dir = root / "class", tty, root / "firmware"
        self.fw_dir.mkdir(parents=True)
        self.started: list[str] = []  # the firmware of each start, in order
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def core(self, n: int, name: str, state: str = "offline", fw: str = "") -> Path:
        d = self.root / f"remoteproc{n}"
        d.mkdir(parents=True)
        (d / "name").write_text(name + "\n")
        (d / "state").write_text(state + "\n")
        (d / "firmware").write_text(fw + "\n")
        return d

    def __enter__(self) -> FakeKernel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            for d in self.root.glob("remoteproc*"):
                try:
                    state = (d / "state").read_text().strip()
                except FileNotFoundError:  # a core the test is making
                    continue
                if state == "start":
                    fw = (d / "firmware").read_text().strip()
                    if not (self.fw_dir / fw).is_file():  # the kernel finds no such firmware: stays down
                        self.started.append(f"missing {fw}")
                        (d / "state").write_text("offline\n")
                        continue
                    self.started.append(fw)
                    (d / "state").write_text("running\n")
                    self.tty.write_text("")
                elif state == "stop":
                    (d / "state").write_text("offline\n")
                    self.tty.unlink(missing_ok=True)
            time.sleep(0.005)


@pytest.fixture
def kernel(tmp_path, monkeypatch):
    tty = tmp_path / "ttyRPMSG0"
    k = FakeKernel(tmp_path, tty)
    monkeypatch.setattr(remoteproc, "CLASS_DIR", str(k.root))
    monkeypatch.setattr(remoteproc, "FIRMWARE_DIR", str(k.fw_dir))
    monkeypatch.setattr(remoteproc, "RECORD_DIR", str(tmp_path / "records"))
    monkeypatch.setattr(remoteproc, "LEGACY_DIRS", (str(tmp_path / "legacy"),))
    monkeypatch.setattr(remoteproc, "READY_TIMEOUT_S", 3)
    elf = tmp_path / "built.elf"
    elf.write_bytes(b"\x7fELF firmware")
    sha = hashlib.sha256(elf.read_bytes()).hexdigest()
    monkeypatch.setattr(firmware, "build", lambda profile: firmware.Firmware(elf, sha, 100, 8, 40))
    with k:
        yield k


def unit_target(tmp_path: Path, kernel: FakeKernel, **table: object) -> UnitTarget:
    spec = read_unit({"kind": "remoteproc", "profile": "stm32mp1-m4", "tty": "/dev/ttyRPMSG0", **table},
                      "t.unit", "local")
    assert spec is not None
    spec = type(spec)(**{**spec.__dict__, "tty": str(kernel.tty)})  # the fake kernel's tty
    return UnitTarget(LocalTarget(workdir=str(tmp_path / "work")),
                      loader_for(spec, "target 't'.unit", "local"))


def test_an_offline_core_is_loaded_then_left_as_it_was(tmp_path, kernel):
    core = kernel.core(0, "dsp")
    core_m4 = kernel.core(1, "m4", "offline", "vendor.elf")
    target = unit_target(tmp_path, kernel)
    link = target.unit_ready()
    ours = kernel.started[-1]
    assert ours.startswith("jitterlab-stm32mp1-m4-") and (kernel.fw_dir / ours).is_file()
    assert link.tty == str(kernel.tty) and (core_m4 / "state").read_text().strip() == "running"
    assert target.unit_ready() is link, "loaded once, kept for the next runs"
    facts = target.unit_facts()
    assert facts["unit_remoteproc"] == str(core_m4) and facts["unit_firmware"].endswith(ours)
    assert facts["unit_core_before"] == "vendor.elf (offline)" and "unit_replaced" not in facts
    assert len(list((tmp_path / "records").iterdir())) == 1, "the restore record is on the board"
    target.close()
    assert (core_m4 / "firmware").read_text() == "vendor.elf"
    assert (core_m4 / "state").read_text().strip() == "offline"
    assert not (kernel.fw_dir / ours).exists() and not list((tmp_path / "records").iterdir())
    assert (core / "state").read_text().strip() == "offline", "another core is left alone"


def test_a_running_core_is_refused_unless_the_campaign_may_replace_it(tmp_path, kernel):
    core = kernel.core(0, "m4", "running", "vendor.elf")
    (kernel.fw_dir / "vendor.elf").write_text("the user's")
    refusing = unit_target(tmp_path, kernel)
    with pytest.raises(RunFailed) as failed:
        refusing.unit_ready()
    assert str(failed.value) == (
        f"target 't'.unit.replace: remoteproc core 'm4' ({core}) is running with firmware vendor.elf; "
        "set unit.replace = true to let jitterlab stop it for the campaign (it is started again with its "
        "firmware after)")
    refusing.close()
    assert (core / "state").read_text().strip() == "running" and kernel.started == []
    replacing = unit_target(tmp_path, kernel, replace=True)
    assert replacing.unit_ready().facts["unit_replaced"] == "vendor.elf (running)"
    assert kernel.started[-1].startswith("jitterlab-")
    replacing.close()
    assert kernel.started[-1] == "vendor.elf", "started again with what it ran"
    assert (core / "state").read_text().strip() == "running"
    assert (core / "firmware").read_text() == "vendor.elf"


def test_a_core_that_is_not_there_names_the_cores_that_are(tmp_path, kernel):
    kernel.core(0, "dsp")
    target = unit_target(tmp_path, kernel, core="m7")
    with pytest.raises(RunFailed) as failed:
        target.unit_ready()
    assert str(failed.value) == ("target 't'.unit.core: target has no remoteproc core named 'm7': its "
                                 "cores are dsp; set unit.core to one of them, or load the SoC's remoteproc "
                                 "driver (a vendor kernel has it)")
    assert failed.value.status == "unavailable"
    target.close()


def test_a_core_that_does_not_come_up_is_put_back_and_the_run_says_why(tmp_path, kernel, monkeypatch):
    core = kernel.core(0, "m4", "offline", "vendor.elf")
    monkeypatch.setattr(remoteproc, "READY_TIMEOUT_S", 1)
    target = unit_target(tmp_path, kernel)
    kernel.tty = tmp_path / "never" / "ttyRPMSG0"  # rpmsg_tty never makes it
    (tmp_path / "never").mkdir()
    target._loader.spec = type(target._loader.spec)(**{**target._loader.spec.__dict__, "tty": "/dev/nope0"})
    with pytest.raises(RunFailed) as failed:
        target.unit_ready()
    assert "failed: the core is running and /dev/nope0 is absent after 1 s" in str(failed.value)
    assert (core / "firmware").read_text() == "vendor.elf"
    assert (core / "state").read_text().strip() == "offline"
    target.close()


@pytest.mark.parametrize("kept_in", ["records", "legacy"])  # legacy: where an older jitterlab kept them
def test_what_a_killed_jitterlab_left_is_put_back_first(tmp_path, kernel, kept_in):
    core = kernel.core(0, "m4", "running", "jitterlab-stm32mp1-m4-0123.elf")
    (kernel.fw_dir / "jitterlab-stm32mp1-m4-0123.elf").write_text("left over")
    records = tmp_path / kept_in
    records.mkdir()
    (records / "otherhost~123~456.prev").write_text(f"{core}\nvendor.elf\nrunning\n"
                                                    "jitterlab-stm32mp1-m4-0123.elf\n")
    (kernel.fw_dir / "vendor.elf").write_text("the user's")
    target = unit_target(tmp_path, kernel, replace=True)  # the user's firmware runs again: replace it
    target.unit_ready()
    assert kernel.started[0] == "vendor.elf", "the killed run's change was put back before ours"
    assert not (kernel.fw_dir / "jitterlab-stm32mp1-m4-0123.elf").exists()
    target.close()
    assert kernel.started[-1] == "vendor.elf" and not list(records.iterdir())
