"""jitterlab's LAVA test definition (jitterlab/lava/): run by hand it says lava-test-case is absent
and prints the results as the commands LAVA would run; under LAVA's own test-shell helpers (Debian's
lava-dispatcher) each cell is a test set and each headline metric a test case with its measurement;
and a real LAVA job (lava-run, no server, LAVA's ssh device type on a loopback sshd: this machine)
clones the definition from this repository, runs the campaign on the device and records the cases."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
import yaml

from jitterlab.execution import bundle
from jitterlab.targets.ssh.loopback_sshd import LoopbackSSHD, available

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "jitterlab" / "lava" / "run-campaign.sh"
HELPERS = Path("/usr/lib/python3/dist-packages/lava_dispatcher/lava_test_shell")
JITTERLAB = f"env PYTHONPATH={REPO} {sys.executable} -m jitterlab"

pytestmark = pytest.mark.slow  # each test measures a real program for a moment


def campaign(path: Path, *, bad: bool = False) -> Path:
    path.write_text(f"""[campaign]
name = "lava-test"
repetitions = 1
duration = "300ms"
warmup = "40ms"
[[target]]
name = "device"
kind = "local"
workdir = "{path.parent / 'work'}"
[matrix]
impl = "{'pyhton' if bad else 'python'}"
period = "20ms"
probe = "self"
""")
    return path


def run_definition(tmp_path: Path, path_dirs: list[Path], *args: str, env: dict | None = None):
    environ = {k: v for k, v in os.environ.items() if k != "JITTERLAB" and not k.startswith("PIP_")}
    environ["PATH"] = os.pathsep.join([*map(str, path_dirs), "/usr/bin", "/bin"])
    environ.update(env or {})
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, env=environ, timeout=300,
                          cwd=REPO)


def test_run_by_hand_it_says_lava_is_absent_and_prints_the_results(tmp_path):
    done = run_definition(tmp_path, [], str(campaign(tmp_path / "c.toml")), str(tmp_path / "r"), "", "",
                          JITTERLAB)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    at = lines.index("lava-test-case is not on PATH (not run by LAVA's test shell): the results follow as "
                     "the commands LAVA would run")
    assert lines[at + 1] == "lava-test-case jitterlab-run --result pass"
    assert lines[at + 2] == "lava-test-set start device_python_20ms_idle_self"
    case = lines[at + 3].split()
    assert case[:3] == ["lava-test-case", "max_rel_period_error_worst_run.self", "--result"]
    assert case[3] in ("pass", "fail") and case[4] == "--measurement" and float(case[5]) >= 0
    assert case[6:] == ["--units", "ratio"]
    assert lines[-1] == "lava-test-set stop device_python_20ms_idle_self"


def test_bad_input_is_one_failed_case_and_nothing_else(tmp_path):
    done = run_definition(tmp_path, [], str(campaign(tmp_path / "c.toml", bad=True)), str(tmp_path / "r"),
                          "", "", JITTERLAB)
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1] == "lava-test-case jitterlab-run --result fail"
    assert "did you mean 'python'" in done.stderr


def install_from(tmp_path: Path, bundle_dir: Path):
    """run-campaign.sh with BUNDLE, SITE in tmp_path, the system's python3 without the user's site."""
    site = tmp_path / "tmp" / "jitterlab-site"
    site.parent.mkdir()
    env = {"TMPDIR": str(site.parent), "PYTHONNOUSERSITE": "1"}
    done = run_definition(tmp_path, [], str(campaign(tmp_path / "c.toml")), str(tmp_path / "r"), "", "", "",
                          str(bundle_dir), env=env)
    return done, site


def like(offline_bundle: Path, where: Path, *, tree: bytes | None = None, **record) -> Path:
    """A bundle of the same wheels (linked), its record changed by `record`, its tree replaced by
    `tree` (b"": none)."""
    where.mkdir()
    source = offline_bundle / "wheels"
    for wheel in source.glob("*.whl"):
        (where / wheel.name).symlink_to(wheel)
    data = json.loads((source / "bundle.json").read_text())
    data.update(record)
    if tree is None:
        (where / "site.tar").symlink_to(source / "site.tar")
    elif tree:
        (where / "site.tar").write_bytes(tree)
        data["tree"]["bytes"] = len(tree)
    (where / "bundle.json").write_text(json.dumps(data, indent=1) + "\n")
    return where


def install_case(lines: list[str]) -> list[str]:
    return next(line.split() for line in lines if line.startswith("lava-test-case jitterlab-install"))


def test_the_bundle_records_its_installed_tree(offline_bundle):
    wheels = offline_bundle / "wheels"
    record = json.loads((wheels / "bundle.json").read_text())
    assert record["tree"] == {"file": "site.tar", "sha256": bundle._sha256(wheels / "site.tar"),
                              "bytes": (wheels / "site.tar").stat().st_size}
    with tarfile.open(wheels / "site.tar") as tree:
        names = tree.getnames()
        assert {m.uid for m in tree.getmembers()} == {0}
    assert "jitterlab/cli/main.py" in names and "pyarrow" in names
    assert not [n for n in names if n.startswith("bin")]  # its #! lines would name this machine's Python
    assert not [n for n in names if n.endswith(".pyc")]  # --no-compile: the device's Python compiles


def test_installed_from_the_bundles_tree_without_network(tmp_path, offline_bundle):
    """BUNDLE: jitterlab and its dependencies unpacked from the tree `jitterlab lava-bundle` installed,
    no pip run, then the campaign measured with what was unpacked, and `jitterlab --help` run from it
    without network (a network namespace of its own, when root)."""
    done, site = install_from(tmp_path, offline_bundle / "wheels")
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert (f"installing jitterlab from {offline_bundle / 'wheels'} into {site} by unpacking site.tar "
            "(no pip, no network)") in lines
    assert any(line.startswith("jitterlab-install: ") and line.endswith(" s, by unpacking site.tar")
               for line in lines)
    install = install_case(lines)
    assert install[2:4] == ["--result", "pass"] and float(install[5]) >= 0 and install[6:] == ["--units", "s"]
    assert "lava-test-case jitterlab-run --result pass" in lines
    assert "lava-test-set start device_python_20ms_idle_self" in lines
    assert (site / "jitterlab" / "cli" / "main.py").is_file() and (site / "pyarrow").is_dir()
    offline = ["unshare", "--net"] if os.geteuid() == 0 and shutil.which("unshare") else []
    helped = subprocess.run([*offline, "/usr/bin/python3", "-m", "jitterlab", "--help"], capture_output=True,
                            text=True, cwd=tmp_path, timeout=120,
                            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(site), "PYTHONNOUSERSITE": "1"})
    assert helped.returncode == 0, helped.stderr
    assert "lava-bundle" in helped.stdout


def test_a_bundle_without_the_tree_is_installed_with_its_pip(tmp_path, offline_bundle):
    """An older bundle (wheels and pip only): the bundle's pip installs the wheels, no index (pip's
    environment settings removed)."""
    old = like(offline_bundle, tmp_path / "old-bundle", tree=b"")
    done, site = install_from(tmp_path, old)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert f"installing jitterlab from {old} into {site} with pip (no network)" in lines
    assert any(line.endswith(" s, by pip from the wheels") for line in lines)
    install = install_case(lines)
    assert install[2:4] == ["--result", "pass"] and install[6:] == ["--units", "s"]
    assert "lava-test-case jitterlab-run --result pass" in lines
    assert (site / "jitterlab" / "cli" / "main.py").is_file() and (site / "pyarrow").is_dir()


@pytest.mark.parametrize(("damage", "said"), [
    ("truncated", "bytes where its bundle.json says"),
    ("garbage", "error: could not unpack BUNDLE"),
])
def test_a_damaged_tree_fails_the_install_case_in_one_line(tmp_path, offline_bundle, damage, said):
    tree = offline_bundle / "wheels" / "site.tar"
    with tree.open("rb") as f:
        head = f.read(1 << 20)
    if damage == "truncated":  # a copy cut short: the record keeps the whole archive's size
        damaged = like(offline_bundle, tmp_path / "b")
        (damaged / "site.tar").unlink()
        (damaged / "site.tar").write_bytes(head)
    else:  # the right size, wrong bytes: tar's header checksums refuse it
        damaged = like(offline_bundle, tmp_path / "b", tree=bytes(b ^ 0x5A for b in head))
    done, site = install_from(tmp_path, damaged)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert any(line.startswith("error: ") and said in line and "jitterlab lava-bundle DIR" in line
               for line in lines), done.stdout
    assert lines[-1] == "lava-test-case jitterlab-install --result fail"
    assert "Traceback" not in done.stdout + done.stderr
    assert not site.exists() and not (tmp_path / "r").exists()


def test_a_tree_for_another_python_falls_back_to_the_wheels(tmp_path, offline_bundle):
    """The tree was installed for the recorded Python: another one takes the pip path (here a bundle
    without pip's wheel, so that path's own error ends it)."""
    other = like(offline_bundle, tmp_path / "b", python="3.10")
    for wheel in other.glob("pip-*.whl"):
        wheel.unlink()
    done, _ = install_from(tmp_path, other)
    assert done.returncode == 0
    lines = done.stdout.splitlines()
    assert any(line.startswith(f"BUNDLE {other}/site.tar is for Python 3.10 on ") and
               line.endswith(": installing from its wheels with pip") for line in lines), done.stdout
    assert f"error: BUNDLE {other} has no pip wheel: write it with jitterlab lava-bundle DIR" in lines
    assert lines[-1] == "lava-test-case jitterlab-install --result fail"


def test_a_bundle_without_pip_is_one_failed_case(tmp_path):
    done = run_definition(tmp_path, [], str(campaign(tmp_path / "c.toml")), str(tmp_path / "r"), "", "", "",
                          str(tmp_path))
    assert done.returncode == 0
    said = f"error: BUNDLE {tmp_path} has no pip wheel: write it with jitterlab lava-bundle DIR"
    assert said in done.stdout
    assert done.stdout.splitlines()[-1] == "lava-test-case jitterlab-install --result fail"
    assert not (tmp_path / "r").exists()


@pytest.fixture
def lava_helpers(tmp_path) -> Path:
    """LAVA's test-shell helpers as its test shell installs them on a device (an interpreter line
    added, as lava_test_shell_action does when it deploys them)."""
    if not (HELPERS / "lava-test-case").is_file():
        pytest.skip("needs Debian's lava-dispatcher (apt install lava-dispatcher)")
    bin_dir = tmp_path / "lava-bin"
    bin_dir.mkdir()
    for name in ("lava-test-case", "lava-test-set", "lava-common-functions"):
        (bin_dir / name).write_text("#!/bin/sh\n" + (HELPERS / name).read_text())
        (bin_dir / name).chmod(0o755)
    return bin_dir


def test_under_lavas_own_test_shell_helpers(tmp_path, lava_helpers):
    """The lines of a store's export, recorded by report-results.sh with LAVA's helpers (the whole
    definition under LAVA runs in the next test)."""
    from jitterlab.report import export as ex
    from tests.report.test_engine_formats import small_store

    store = small_store(tmp_path / "s")
    lines = ex.export(store, store.runs(), "lava", None)
    store.close()
    results = tmp_path / "lava-results"
    environ = {"PATH": os.pathsep.join([str(lava_helpers), "/usr/bin", "/bin"]),
               "LAVA_RESULT_DIR": str(results)}
    done = subprocess.run([str(SCRIPT.with_name("report-results.sh"))], input=lines, capture_output=True,
                          text=True, env=environ, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "lava-test-case is not on PATH" not in done.stdout
    signals = [line for line in done.stdout.splitlines() if line.startswith("<LAVA_SIGNAL_")]
    at = signals.index("<LAVA_SIGNAL_TESTSET START board_c-fifo_10ms_idle_vpin>")
    assert signals[at + 1:at + 4] == [
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=max_rel_period_error_worst_run.vpin RESULT=pass UNITS=ratio "
        "MEASUREMENT=0.05>",
        "<LAVA_SIGNAL_TESTCASE TEST_CASE_ID=p99_rel_period_error_median_of_runs.vpin RESULT=pass UNITS=ratio "
        "MEASUREMENT=0.015>",
        "<LAVA_SIGNAL_TESTSET STOP>"]
    assert signals.count("<LAVA_SIGNAL_TESTSET STOP>") == 4
    case = results / "results" / "latency_max_ns_worst_run"
    assert [(case / f).read_text().strip() for f in ("result", "measurement", "units")] == [
        "fail", "40200", "ns"]


def device_dictionary(path: Path, sshd: LoopbackSSHD) -> Path:
    """A LAVA device dictionary (as lava-server renders one) of the ssh device type: the device is
    whatever answers SSH there, here this machine."""
    path.write_text(json.dumps({
        "constants": {"failure_retry": 1, "boot_retry": 1, "default-shell-prompt": "lava-test: # ",
                      "kernel-start-message": "Linux version [0-9]", "spawn_maxread": 4092,
                      "shutdown-message": "The system is going down for reboot NOW",
                      "posix": {"lava_test_sh_cmd": "/bin/sh", "lava_test_results_dir": "/lava-%s",
                                "lava_test_shell_file": "~/.bashrc"}},
        "commands": {},
        "actions": {
            "deploy": {"connections": {"serial": None, "ssh": None}, "methods": {"ssh": {
                "host": "127.0.0.1", "port": sshd.port, "user": "root", "identity_file": str(sshd.client_key),
                "options": ["-o", "Compression=yes", "-o", "PasswordAuthentication=no", "-o",
                            "LogLevel=FATAL"]}}},
            "boot": {"connections": {"serial": None, "ssh": None}, "methods": {"ssh": None}}},
        "timeouts": {"actions": {}, "connections": {}}}))
    return path


def job(path: Path, campaign_path: Path, results: Path) -> Path:
    path.write_text(json.dumps({
        "device_type": "ssh", "job_name": "jitterlab on an ssh device", "priority": "medium",
        "visibility": "public",
        "timeouts": {"job": {"minutes": 20}, "action": {"minutes": 15}, "connection": {"minutes": 2}},
        "actions": [
            {"deploy": {"to": "ssh", "os": "debian", "timeout": {"minutes": 2}}},
            {"boot": {"method": "ssh", "connection": "ssh", "prompts": ["root@", "# "],
                      "timeout": {"minutes": 2}}},
            {"test": {"timeout": {"minutes": 15}, "definitions": [{
                "repository": str(REPO), "from": "git", "path": "jitterlab/lava/jitterlab.yaml",
                "name": "jitterlab", "parameters": {"CAMPAIGN": str(campaign_path), "RESULTS": str(results),
                                                    "JITTERLAB": JITTERLAB}}]}}]}))
    return path


@pytest.mark.skipif(shutil.which("lava-run") is None or os.geteuid() != 0 or available() is not None,
                    reason="needs Debian's lava-dispatcher (lava-run), root (its work directory is "
                           "/var/lib/lava) and openssh-server")
def test_a_real_lava_job_records_each_cell_as_test_cases(tmp_path):
    if subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True).returncode != 0:
        pytest.skip("LAVA clones the definition from this repository: needs a git checkout")
    sshd = LoopbackSSHD(tmp_path / "sshd")
    sshd.start()
    try:
        device = device_dictionary(tmp_path / "device.yaml", sshd)  # JSON is YAML
        definition = job(tmp_path / "job.yaml", campaign(tmp_path / "c.toml"), tmp_path / "r")
        done = subprocess.run(["lava-run", "--job-id", "1", "--output-dir", str(tmp_path / "out"),
                               "--device", str(device), str(definition)],
                              capture_output=True, text=True, timeout=900)
    finally:
        sshd.stop()
    # lava-run logs YAML flow mappings (JSON but for its "! " tags), one a line, on stderr
    records = [yaml.safe_load(line) for line in done.stderr.splitlines() if line.startswith("{")]
    results = [r["msg"] for r in records if r.get("lvl") == "results"]
    assert {"case": "job", "definition": "lava", "result": "pass"} in results, done.stderr[-3000:]
    cases = {(r.get("set"), r["case"]): r for r in results if r.get("definition") == "0_jitterlab"}
    assert cases[(None, "jitterlab-run")]["result"] == "pass"
    cell = cases[("device_python_20ms_idle_self", "max_rel_period_error_worst_run.self")]
    assert cell["result"] in ("pass", "fail") and cell["units"] == "ratio" and float(cell["measurement"]) >= 0
