"""The membw benchmark: mbw's output (real ones from tests/data/mbw), keys, and a real run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import membw
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.store.raw import read_raw
from tests.support import campaign_from_toml, run_local_campaign, spawned_by_us, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "mbw"
MEMCPY = [(0.01494, 4283.228), (0.01162, 5506.797), (0.00813, 7874.016), (0.00901, 7101.642),
          (0.00846, 7569.486)]


def output(name: str) -> str:
    return (DATA / name).read_text()


def test_iterations_are_read_in_order():
    assert membw.parse_output(output("memcpy-64M.txt")) == MEMCPY
    assert len(membw.parse_output(output("dumb-64M.txt"))) == 5
    assert membw.parse_output(output("mcblock-64M-b64k.txt"))[0] == (0.00595, 10759.919)


def test_metrics_drop_the_warmup_and_average_like_mbw():
    metrics, series = membw.bandwidth_metrics(MEMCPY, warmup_s=0.02)
    got = {m.name: (m.value, m.unit, m.direction) for m in metrics}
    kept = [c for _, c in MEMCPY[1:]]  # 0.01494 s fits in the 20 ms warm-up, 0.01494 + 0.01162 does not
    assert got == {
        "bandwidth_mib_per_s": (pytest.approx(len(kept) / sum(1 / c for c in kept)), "MiB/s", "higher"),
        "bandwidth_min_mib_per_s": (5506.797, "MiB/s", "higher"),
        "bandwidth_max_mib_per_s": (7874.016, "MiB/s", "higher"),
        "iterations": (4.0, "count", "none"),
        "warmup_iterations": (1.0, "count", "none"),
    }
    assert series.unit == "KiB/s" and series.values.tolist() == [round(c * 1024) for c in kept]
    # mbw's own AVG line is total MiB / total time over all iterations: the same formula
    all_metrics, _ = membw.bandwidth_metrics(MEMCPY, warmup_s=0.0)
    assert all_metrics[0].value == pytest.approx(6135.087, rel=2e-3)
    # a warm-up longer than the run keeps the last iteration
    assert membw.bandwidth_metrics(MEMCPY, warmup_s=10.0)[0][3].value == 1.0


def test_iterations_fit_the_duration():
    assert membw.iterations_for(1.0, [(0.01, 1.0), (0.02, 1.0)]) == 50
    assert membw.iterations_for(0.001, [(0.5, 1.0)]) == 1
    assert membw.iterations_for(1e9, [(0.001, 1.0)]) == membw.MAX_ITERATIONS


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (output("error-size.txt"), "mbw printed no iteration"),
        (output("error-alloc.txt"), "mbw printed no iteration"),
        ("\n".join(output("memcpy-64M.txt").splitlines()[:-1]), "ends after 5 iterations without its AVG"),
        (output("memcpy-64M.txt").replace("Copy: 7874.016", "Copy: 78x4.016"), "cannot read the numbers"),
        (output("memcpy-64M.txt").replace("\n3\t", "\n7\t"), "iteration 7 follows 3 others"),
        (output("memcpy-64M.txt").replace("Copy: 7874.016", "Copy: inf"), "did not resolve an iteration"),
    ],
)
def test_bad_output_is_run_failed_with_the_output_attached(text, reason):
    with pytest.raises(RunFailed, match=reason) as err:
        membw.parse_output(text)
    assert err.value.attachments == {"mbw.txt": text.encode()}


def campaign_of(matrix: str):
    return campaign_from_toml("membw", matrix)


def test_defaults():
    [cell] = campaign_of("").cells
    assert dict(cell.params) == {"method": "memcpy", "size": 64 << 20, "block": "auto"}
    [cell] = campaign_of('method = "mcblock"\nblock = "64k"').cells
    assert cell.param("block") == 65536 and membw.Membw().label(cell) == "membw mcblock 64M block 64k idle"


@pytest.mark.parametrize(
    ("matrix", "message"),
    [
        ('method = "stream"', "c.toml: matrix.method: unknown value 'stream'"),
        ('size = "1536k"', "c.toml: matrix.size: mbw takes whole MiB"),
        ('size = "512k"', "c.toml: matrix.size: 512k is out of range"),
        ('block = "64k"', 'c.toml: matrix.block: only method "mcblock" copies in blocks'),
        ('method = "mcblock"\nsize = "1M"\nblock = "2M"', "c.toml: matrix.block: 2M is larger than the"),
    ],
)
def test_bad_keys_are_user_errors(matrix, message):
    with pytest.raises(UserError) as err:
        campaign_of(matrix)
    assert str(err.value).startswith(message)


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("mbw") is None, reason="no mbw (scripts/install-deps installs it)")
def test_membw_end_to_end(tmp_path):
    rc, store = run_local_campaign(tmp_path, """
[[matrix]]
benchmark = "membw"
method = ["memcpy", "dumb"]
size = "8M"
[[matrix]]
benchmark = "membw"
method = "mcblock"
size = "8M"
block = "64k"
""", name="membw-e2e", duration="500ms", warmup="20ms")
    assert rc == 0
    runs = store.runs()
    assert sorted(r.param("method") for r in runs) == ["dumb", "mcblock", "memcpy"]
    for run in runs:
        assert run.status == "ok", run.error
        described = units_and_directions(run, "bandwidth_mib_per_s")
        assert described == {"bandwidth_mib_per_s": ("MiB/s", "higher")}
        mean = run.metric("bandwidth_mib_per_s", "")
        assert mean > 0
        assert run.metric("bandwidth_min_mib_per_s") <= mean <= run.metric("bandwidth_max_mib_per_s")
        series = read_raw(store.root / run.raw_path)["iteration_kib_per_s"]
        assert len(series) == run.metric("iterations") and series.unit == "KiB/s"
    assert spawned_by_us() == []
