"""A real LAVA qemu job (examples/lava-qemu-job.yaml, with file:// URLs): lava-run (no server) with a
device dictionary rendered from LAVA's own qemu.jinja2 deploys the project's Debian guest to tmpfs
(kernel + the root as a cpio ramdisk, to which LAVA appends its test-shell overlay and the offline
bundle), boots it with qemu (TCG), and its test shell over the serial console installs jitterlab
from the bundle without network (its wheels, with the bundle's pip), runs the definition's
campaign and records each cell's measurements in the job's log.

The bundle shipped is the one without the installed tree (`--installed-tree`): the tree makes the
ramdisk 640 MB larger, which the emulated guest's kernel unpacks at boot. Alone on a quiet machine
the tree saved 17 s of the job (146 -> 129 s); in the suite, beside the other emulators, the job took
312-388 s with it against 177-207 s without. The tree's install is tested by unpacking it here
(tests/lava/test_definition.py)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tarfile
import time
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "lava-qemu-job.yaml"

pytestmark = [pytest.mark.vm, pytest.mark.skipif(
    shutil.which("lava-run") is None or shutil.which("qemu-system-x86_64") is None or os.geteuid() != 0
    or shutil.which("cpio") is None,
    reason="needs Debian's lava-dispatcher (lava-run), qemu-system-x86, cpio and root (LAVA's work "
           "directory is /var/lib/lava)")]


def job(path: Path, guest, bundle_tar: Path) -> Path:
    """The example job, its URLs pointing at this machine's files and its definition at this checkout."""
    data = yaml.safe_load(EXAMPLE.read_text())
    images = data["actions"][0]["deploy"]["images"]
    images["kernel"]["url"] = f"file://{guest.kernel}"
    images["ramdisk"]["url"] = f"file://{guest.ramdisk}"
    images["ramdisk"]["overlays"]["jitterlab"]["url"] = f"file://{bundle_tar}"
    data["actions"][2]["test"]["definitions"][0]["repository"] = str(REPO)
    path.write_text(yaml.safe_dump(data))
    return path


def without_tree(bundle_dir: Path, tar: Path) -> Path:
    """The bundle as `lava-bundle --tar` writes it without --installed-tree: its wheels and record."""
    record = json.loads((bundle_dir / "bundle.json").read_text())
    record.pop("tree", None)
    (tar.parent / "bundle.json").write_text(json.dumps(record, indent=1) + "\n")
    with tarfile.open(tar, "w") as archive:
        for wheel in sorted(bundle_dir.glob("*.whl")):
            archive.add(wheel, arcname=wheel.name)
        archive.add(tar.parent / "bundle.json", arcname="bundle.json")
    return tar


def test_a_lava_qemu_job_installs_offline_and_records_the_measurements(tmp_path, offline_bundle):
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("LAVA clones the definition from this repository: needs a git checkout")
    from tests.lava import qemu_guest

    files = qemu_guest.prepare()
    device = qemu_guest.device_dictionary(tmp_path / "device.yaml")
    bundle_tar = without_tree(offline_bundle / "wheels", tmp_path / "bundle.tar")
    definition = job(tmp_path / "job.yaml", files, bundle_tar)
    started = time.monotonic()
    done = subprocess.run(["lava-run", "--job-id", "1", "--output-dir", str(tmp_path / "out"),
                           "--device", str(device), str(definition)],
                          capture_output=True, text=True, timeout=2400)
    took_s = time.monotonic() - started
    records = [yaml.safe_load(line) for line in done.stderr.splitlines() if line.startswith("{")]
    results = [r["msg"] for r in records if r.get("lvl") == "results"]
    (tmp_path / "log.txt").write_text(done.stderr)
    assert {"case": "job", "definition": "lava", "result": "pass"} in results, done.stderr[-4000:]
    cases = {(r.get("set"), r["case"]): r for r in results if r.get("definition") == "0_jitterlab"}
    install = cases[(None, "jitterlab-install")]
    assert install["result"] == "pass" and install["units"] == "s"
    guest = "\n".join(str(r["msg"]) for r in records if r.get("lvl") == "target")  # what the console said
    # the bundle without the tree: the guest's python3 ran the bundle's pip on its wheels
    assert any(line.startswith("jitterlab-install: ") and line.endswith(" s, by pip from the wheels")
               for line in guest.splitlines()), guest[-6000:]
    assert cases[(None, "jitterlab-run")]["result"] == "pass", guest[-6000:]
    for impl in ("python", "bash"):
        cell = cases[(f"device_{impl}_20ms_idle_self", "max_rel_period_error_worst_run.self")]
        assert cell["result"] in ("pass", "fail") and cell["units"] == "ratio"
        assert float(cell["measurement"]) >= 0
    # the job's log says what qemu ran: the guest was emulated, the kernel and ramdisk LAVA deployed
    command = next(r["msg"] for r in records if str(r.get("msg", "")).startswith("Boot command:"))
    assert "-accel tcg" in command and "-initrd" in command and "-kernel" in command
    print(f"LAVA qemu job: {took_s:.0f} s; install {install['measurement']} s; "
          + "; ".join(f"{s} {c} {r['measurement']} {r['units']}" for (s, c), r in cases.items() if s))
