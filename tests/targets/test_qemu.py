"""A Debian kernel booted by jitterlab with qemu (emulated here: functional evidence only): a
campaign runs in it like on any target and records the accelerator; a guest that does not come up
in time is one error naming the kernel and what its console said; no qemu outlives jitterlab,
also when jitterlab is killed."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.store.catalog import Store

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("qemu-system-x86_64") is None,
    reason="qemu-system-x86 is not installed (scripts/install-deps test)")]


def campaign(tmp_path: Path, *, boot_timeout: str = "180s", duration: str = "300ms",
             cmdline: str = "") -> Path:
    path = tmp_path / "vm.toml"
    path.write_text(f"""[campaign]
name = "vm"
repetitions = 1
duration = "{duration}"
warmup = "20ms"
[[target]]
name = "guest"
kind = "qemu"
kernel = "standard"
cpus = 2
memory = "1G"
boot_timeout = "{boot_timeout}"
cmdline = "{cmdline}"
[matrix]
impl = ["python", "c-file"]
period = "20ms"
probe = "self"
""")
    return path


def qemus_tagged(tag: str) -> list[int]:
    """The qemu processes whose environment carries `tag` (they inherit it from their jitterlab)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"qemu-system" not in Path(f"/proc/{pid}/cmdline").read_bytes():
                continue
            if f"JL_TEST_TAG={tag}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                found.append(int(pid))
        except OSError:
            continue
    return found


def test_a_campaign_runs_in_the_guest_and_says_it_was_emulated(tmp_path, monkeypatch, capsys):
    tag = uuid.uuid4().hex
    monkeypatch.setenv("JL_TEST_TAG", tag)
    assert main(["run", str(campaign(tmp_path)), "--results", str(tmp_path / "r")]) == 0
    assert qemus_tagged(tag) == []  # shut down when the campaign ended
    store = Store(tmp_path / "r", create=False)
    runs = store.runs()
    assert sorted(r.cell.param("impl") for r in runs) == ["c-file", "python"]
    assert {r.status for r in runs} == {"ok"}
    info = store.sysinfo(runs[0].sysinfo_id).as_json()  # as stored
    assert info["vm_accel"] in ("kvm", "tcg") and info["kernel_release"].startswith("6.")
    assert info["vm_boot_s"] > 0
    out = capsys.readouterr().out
    html = tmp_path / "report.html"
    assert main(["report", "--results", str(tmp_path / "r"), "-o", str(html)]) == 0
    if info["vm_accel"] == "tcg":  # the summary, the envelope and the report say what it is worth
        assert "note: guest: an emulated CPU (qemu TCG)" in out and "never timing evidence" in out
        assert "Emulated CPU:</b> guest" in html.read_text() and "<i title=" in html.read_text()
        assert main(["compare", "--results", str(tmp_path / "r"), "--baseline", "impl=python",
                     "--candidate", "impl=c-file", "--no-pooled"]) == 0
        assert "a timing verdict between them means nothing" in capsys.readouterr().err


def test_a_guest_that_does_not_come_up_in_time_fails_its_runs_naming_the_kernel_and_console(tmp_path):
    # every kernel message printed, each held 100 ms (boot_delay): a boot of tens of seconds whatever
    # this machine's speed (an emulated guest can come up in under 5 s)
    slow = campaign(tmp_path, boot_timeout="5s", cmdline="loglevel=8 boot_delay=100")
    rc = main(["run", str(slow), "--results", str(tmp_path / "r")])
    assert rc == 1  # an unreachable target: its runs fail, the campaign (other targets) goes on
    runs = Store(tmp_path / "r", create=False).runs()
    assert len(runs) == 2 and {r.status for r in runs} == {"failed"}
    error = runs[0].error
    assert "did not come up within 5s" in error and "6.1.0" in error and "console:" in error, error


def test_no_qemu_outlives_a_killed_jitterlab(tmp_path):
    tag = uuid.uuid4().hex
    env = {**os.environ, "JL_TEST_TAG": tag}
    proc = subprocess.Popen(
        [sys.executable, "-m", "jitterlab", "run", str(campaign(tmp_path, duration="60s")),
         "--results", str(tmp_path / "r")],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not qemus_tagged(tag):
            assert proc.poll() is None and time.monotonic() < deadline, "qemu never started"
            time.sleep(0.2)
        time.sleep(3)  # mid-boot
        os.kill(proc.pid, signal.SIGKILL)  # no cleanup code of jitterlab runs
        proc.wait()
        deadline = time.monotonic() + 20
        while qemus_tagged(tag) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert qemus_tagged(tag) == []
    finally:
        for pid in qemus_tagged(tag):
            os.kill(pid, signal.SIGKILL)
        if proc.poll() is None:
            proc.kill()
