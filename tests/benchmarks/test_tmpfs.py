"""tmpfs-write: rounds as GNU dd and busybox print them (tests/data/dd), timing chosen from what the
target offers, keys, a real run that leaves nothing in /dev/shm."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.analysis.throughput import rate_metrics
from jitterlab.measure.benchmarks import tmpfs
from jitterlab.model.errors import RunFailed, UserError
from tests.support import campaign_from_toml, run_local_campaign, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "dd"
MB64 = 64 << 20


def text(name: str) -> str:
    return (DATA / name).read_text()


def test_gnu_dd_times_itself():
    assert tmpfs.parse_rounds(text("gnu-coreutils-9.1-64M.txt"), MB64) == [0.122786]
    assert tmpfs.parse_rounds(text("gnu-coreutils-9.1-64M-4k.txt"), MB64) == [0.0526883]
    [m] = [m for m in rate_metrics("write", [0.122786], MB64, count="rounds") if m.name == "write_mb_per_s"]
    assert (m.value, m.unit, m.direction) == (pytest.approx(MB64 / 1e6 / 0.122786), "MB/s", "higher")


def test_busybox_falls_back_to_the_uptime_clock_for_long_rounds_only():
    assert tmpfs.parse_rounds(text("busybox-1.35-4G.txt"), 4096 << 20) == [pytest.approx(5579.38 - 5561.09)]
    with pytest.raises(RunFailed) as info:
        tmpfs.parse_rounds(text("busybox-1.35-64M.txt"), MB64)
    assert info.value.status == "unmeasurable" and "give a size that takes over 1 s" in info.value.reason


def test_date_with_nanoseconds_times_a_dd_that_reports_nothing():
    round_ = "64+0 records in\n64+0 records out\njitterlab-round 0 1000000000000 1000250000000 5.00 5.25\n"
    assert tmpfs.parse_rounds(round_ * 2, MB64) == [0.25, 0.25]


@pytest.mark.parametrize(("raw", "reason"), [
    (text("gnu-no-such-directory.txt"),
     "dd failed (exit status 1): dd: failed to open '/nonexistent/dir/f': No such file or directory"),
    (text("gnu-coreutils-9.1-64M.txt").replace("67108864 bytes", "1048576 bytes"),
     "dd wrote 1048576 bytes of"),
    ("", "the tmpfs script printed no round"),
    (text("gnu-coreutils-9.1-64M.txt").replace("0.122786 s", "0 s"), "took no measurable time"),
])
def test_failures_say_why(raw, reason):
    with pytest.raises(RunFailed) as info:
        tmpfs.parse_rounds(raw, MB64)
    assert reason in info.value.reason


def test_keys():
    [cell] = campaign_from_toml("tmpfs-write", "").cells
    assert dict(cell.params) == {"size": MB64, "block_size": 1 << 20}
    assert tmpfs.TmpfsWrite().label(cell) == "tmpfs-write 64M in 1M writes idle"
    with pytest.raises(UserError, match=r"^c.toml: matrix.size: 65540 is not a whole number of blocks of 4k"):
        campaign_from_toml("tmpfs-write", 'size = 65540\nblock_size = "4k"')


@pytest.mark.slow
def test_real_run_leaves_nothing_in_dev_shm(tmp_path):
    before = set(Path("/dev/shm").iterdir())
    rc, store = run_local_campaign(tmp_path, '[matrix]\nbenchmark = "tmpfs-write"\nsize = "8M"\n',
                                   name="shm", duration="300ms")
    assert rc == 0
    [run] = store.runs()
    assert run.status == "ok", run.error
    rate = ("MB/s", "higher")
    assert units_and_directions(run) == {"write_mb_per_s": rate, "write_min_mb_per_s": rate,
                                         "write_max_mb_per_s": rate, "rounds": ("count", "none")}
    assert run.metric("rounds", "") >= 1 and run.metric("write_mb_per_s", "") > 0
    assert not [p for p in set(Path("/dev/shm").iterdir()) - before if "tmpfs" in p.name]


def test_rounds_are_read_as_median_slowest_fastest_and_count():
    metrics = {m.name: m for m in rate_metrics("write", [1.0, 2.0, 4.0], 8_000_000, count="rounds")}
    assert {n: m.value for n, m in metrics.items()} == {
        "write_mb_per_s": 4.0, "write_min_mb_per_s": 2.0, "write_max_mb_per_s": 8.0, "rounds": 3.0}
    assert metrics["rounds"].direction == "none" and metrics["write_mb_per_s"].direction == "higher"
