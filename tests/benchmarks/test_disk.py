"""The disk benchmark: fio's JSON reports (real ones from tests/data/fio), keys, and real runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import disk
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.store.catalog import Store
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from tests.support import campaign_from_toml, run_local_campaign, spawned_by_us, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "fio"


def report(name: str) -> str:
    return (DATA / name).read_text()


def test_randread_report():
    metrics = disk.parse_report(report("randread.json"), "randread")
    got = {m.name: (m.value, m.unit, m.direction) for m in metrics}
    assert got == {
        "read_bandwidth_mib_per_s": (143855120 / (1 << 20), "MiB/s", "higher"),
        "read_ops_per_s": (35120.879121, "IO/s", "higher"),
        "read_bytes": (143998976.0, "bytes", "none"),
        "read_clat_min_ns": (23864.0, "ns", "lower"),
        "read_clat_mean_ns": (27398.325833, "ns", "lower"),
        "read_clat_max_ns": (241643.0, "ns", "lower"),
        "read_clat_std_ns": (5077.616482, "ns", "lower"),
        "read_clat_p50_ns": (25728.0, "ns", "lower"),
        "read_clat_p99_ns": (43776.0, "ns", "lower"),
        "read_clat_p999_ns": (71168.0, "ns", "lower"),
        "read_clat_p9999_ns": (173056.0, "ns", "lower"),
        "read_clat_samples": (35156.0, "count", "none"),
    }


@pytest.mark.parametrize("pattern", ["seqread", "seqwrite", "randwrite"])
def test_each_pattern_reads_its_direction(pattern):
    side = "read" if pattern.endswith("read") else "write"
    job = json.loads(report(f"{pattern}.json"))["jobs"][0][side]
    got = {m.name: m.value for m in disk.parse_report(report(f"{pattern}.json"), pattern)}
    assert got[f"{side}_ops_per_s"] == job["iops"]
    assert got[f"{side}_clat_p99_ns"] == job["clat_ns"]["percentile"]["99.000000"]
    assert all(name.startswith(side) for name in got)


def test_a_failed_job_and_bad_reports_are_run_failed():
    refused = report("direct-refused.json")
    assert disk.job_error(refused) == disk.EINVAL
    with pytest.raises(RunFailed, match="fio's job ended with error 22") as err:
        disk.parse_report(refused, "seqread")
    assert err.value.attachments == {"fio.json": refused.encode()}
    text = report("seqread.json")
    with pytest.raises(RunFailed, match="fio wrote no JSON report"):
        disk.parse_report(text[: len(text) // 2], "seqread")
    with pytest.raises(RunFailed, match="fio wrote no JSON report"):
        disk.parse_report("", "seqread")
    data = json.loads(text)
    del data["jobs"][0]["read"]["clat_ns"]["percentile"]
    with pytest.raises(RunFailed, match=r"lacks jobs\[0\].read .*percentile"):
        disk.parse_report(json.dumps(data), "seqread")
    with pytest.raises(RunFailed, match="fio did no write") as err:
        disk.parse_report(text, "seqwrite")  # a read job moved no written byte
    assert err.value.status == "unmeasurable"


def campaign_of(matrix: str):
    return campaign_from_toml("disk", matrix, duration="1500ms", warmup="50ms")


def test_defaults_and_fio_argv():
    campaign = campaign_of('pattern = ["seqread", "randwrite"]')
    seq, rand = campaign.cells
    assert dict(seq.params) == {"pattern": "seqread", "size": 64 << 20, "block_size": "auto", "direct": False,
                                "iodepth": 1, "ioengine": "psync"}
    ctx = RunContext(
        FakeTarget(), campaign.settings, rand, 0, "/s", Path("/l"), "/b", Placement(None, None), True)
    assert disk.Disk().fio_argv(ctx, "/s/fio-data/data", "/s/fio.json") == [
        "fio", "--name=jitterlab-disk", "--filename=/s/fio-data/data", "--rw=randwrite", "--bs=4096",
        f"--size={64 << 20}", "--ioengine=psync", "--iodepth=1", "--direct=0", "--time_based",
        "--runtime=1500ms", "--percentile_list=50:99:99.9:99.99", "--output-format=json",
        "--output=/s/fio.json", "--ramp_time=50ms"]
    assert disk.Disk().label(seq) == "disk seqread 1M 64M psync idle"


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ('size = "8G"', "c.toml: matrix.size: 8G is out of range; give a value between 4k and 4G"),
        ('pattern = "randrw"', "c.toml: matrix.pattern: unknown value 'randrw'"),
        ("iodepth = 8", "c.toml: matrix.iodepth: ioengine 'psync' does one I/O at a time"),
        ('size = "64k"', "c.toml: matrix.block_size: 1M is larger than the file (64k)"),
        ('direct = "yes"', "c.toml: matrix.direct: expected true or false"),
    ],
)
def test_bad_keys_are_user_errors(matrix, message):
    with pytest.raises(UserError) as err:
        campaign_of(matrix)
    assert str(err.value).startswith(message)


# --- real runs ------------------------------------------------------------------------------------------

needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="no fio (scripts/install-deps)")


def run_campaign(tmp_path: Path, matrix: str, workdir: Path) -> tuple[int, Store]:
    return run_local_campaign(tmp_path, f'[matrix]\nbenchmark = "disk"\nsize = "8M"\n{matrix}',
                              workdir=workdir, name="disk-e2e", duration="500ms", warmup="20ms")


@pytest.mark.slow
@needs_fio
def test_seqread_and_randwrite_end_to_end_leave_no_file(tmp_path):
    rc, store = run_campaign(tmp_path, 'pattern = ["seqread", "randwrite"]', tmp_path / "target")
    assert rc == 0
    runs = {r.param("pattern"): r for r in store.runs()}
    for pattern, side in (("seqread", "read"), ("randwrite", "write")):
        run = runs[pattern]
        assert run.status == "ok", run.error
        bandwidth = f"{side}_bandwidth_mib_per_s"
        assert run.metric(bandwidth, "") > 0
        assert units_and_directions(run, bandwidth) == {bandwidth: ("MiB/s", "higher")}
        assert run.metrics[("", f"{side}_clat_p99_ns")].direction == "lower"
        assert run.metric(f"{side}_ops_per_s") > 0
        assert json.loads((store.root / run.attachments["fio.json"]).read_text())["jobs"]
    assert os.listdir(tmp_path / "target" / "runs") == []  # the test file went with the scratch dir
    assert spawned_by_us() == []


@pytest.mark.slow
@needs_fio
def test_o_direct_refused_by_the_file_system_is_unavailable(tmp_path):
    workdir = tmp_path / "ramfs"
    workdir.mkdir()
    # ramfs has no O_DIRECT (tmpfs has it since Linux 6.6): a real refusal, where mounting is allowed
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "ramfs", "ramfs", str(workdir)],
                                           capture_output=True).returncode != 0:
        pytest.skip("cannot mount a ramfs here (needs root)")
    try:
        rc, store = run_campaign(tmp_path, "direct = true", workdir)
    finally:
        subprocess.run(["umount", str(workdir)], check=True)
    [run] = store.runs()
    assert rc == 1 and run.status == "unavailable"
    assert "(ramfs) refuses O_DIRECT" in run.error and "set direct = false" in run.error
    assert {"fio.json", "fio.log"} <= set(run.attachments)
    assert spawned_by_us() == []


def test_a_file_larger_than_the_free_space_fails_before_fio_starts():
    campaign = campaign_of("")
    target = FakeTarget()
    header = "Filesystem 1024-blocks Used Available Capacity Mounted on\n"
    target.respond(["df"], response=Completed((), 0, header + "/dev/x 2000000 1990000 10000 99% /\n", ""))
    ctx = RunContext(
        target, campaign.settings, campaign.cells[0], 0, "/s", Path("/l"), "/b", Placement(None, None),
                     True)
    with pytest.raises(RunFailed, match=r"the test file \(64M\) does not fit in /s/fio-data: 10000k free"):
        disk._check_space(ctx, "/s/fio-data", 64 << 20)
    target.respond(["df"], response=Completed((), 0, header + "ramfs 0 0 0 - /r\n", ""))
    disk._check_space(ctx, "/s/fio-data", 64 << 20)  # ramfs tells nothing: fio finds out
