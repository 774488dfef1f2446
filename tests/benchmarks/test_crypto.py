"""crypto: `openssl speed -mr` output (real ones in tests/data/openssl), keys, failures, a real run."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import crypto
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.fake import FakeBehaviour, FakeTarget
from jitterlab.targets.processes import LAUNCH
from tests.support import campaign_from_toml, run_local_campaign, units_and_directions

DATA = Path(__file__).parent.parent / "data" / "openssl"


def output(name: str) -> str:
    return (DATA / name).read_text()


def test_machine_readable_output():
    # +R:194926:AES-128-GCM:1.000000 -> 194926 blocks of 16384 bytes in 1 s
    assert crypto.parse_mr(output("aes-128-gcm-16384.txt"), "aes-128-gcm", 16384) == 194926 * 16384
    assert crypto.parse_mr(output("sha256-64.txt"), "sha256", 64) == 5049803 * 64


@pytest.mark.parametrize(
    ("name", "algorithm", "block", "reason"),
    [
        ("sha256-64.txt", "aes-128-gcm", 64, "openssl speed measured 'sha256', not 'aes-128-gcm'"),
        ("sha256-64.txt", "sha256", 16384, "do not match the 16384 bytes asked for"),
        ("unknown-algorithm.txt", "sha256", 64, "has 0 '+H:' and 0 '+F:' lines; expected one of each"),
    ],
)
def test_wrong_or_missing_results_fail_clearly(name, algorithm, block, reason):
    with pytest.raises(RunFailed) as err:
        crypto.parse_mr(output(name), algorithm, block)
    assert reason in err.value.reason


@pytest.mark.parametrize(
    ("mangle", "reason"),
    [
        (lambda t: t[: t.index("+F:")], "has 1 '+H:' and 0 '+F:' lines"),
        (lambda t: t.replace("+H:16384", "+H:16384:64"), "do not match the 16384 bytes"),
        (lambda t: t.replace("3193667584.00", "fast"), "has 1 '+H:' and 0 '+F:' lines"),
        (lambda t: t + t, "has 2 '+H:' and 2 '+F:' lines"),
    ],
)
def test_cut_short_and_garbled_output_fails_clearly(mangle, reason):
    with pytest.raises(RunFailed) as err:
        crypto.parse_mr(mangle(output("aes-128-gcm-16384.txt")), "aes-128-gcm", 16384)
    assert reason in err.value.reason


def campaign_of(matrix: str, duration: str = "1s"):
    return campaign_from_toml("crypto", matrix, duration=duration)


def test_keys():
    [cell] = campaign_of("").cells
    assert dict(cell.params) == {"algorithm": "aes-128-gcm", "block_size": 16384}
    assert crypto.Crypto().label(cell) == "crypto aes-128-gcm 16k idle"
    cells = campaign_of('algorithm = ["aes-128-gcm", "sha256"]\nblock_size = "64"').cells
    assert [dict(c.params) for c in cells] == [
        {"algorithm": "aes-128-gcm", "block_size": 64}, {"algorithm": "sha256", "block_size": 64}]
    with pytest.raises(UserError, match=r"^c.toml: matrix.algorithm: unknown value 'md5'"):
        campaign_of('algorithm = "md5"')


def run_fake(tmp_path: Path, behaviour: FakeBehaviour, matrix: str = ""):
    campaign = campaign_of(matrix)
    target = FakeTarget()
    target.behave(["sh", "-c", LAUNCH], behaviour)
    scratch, local = tmp_path / "s", tmp_path / "l"
    scratch.mkdir(parents=True), local.mkdir(parents=True)
    placement = Placement(None, None)
    ctx = RunContext(
        target, campaign.settings, campaign.cells[0], 0, str(scratch), local, "/b", placement, True)
    return crypto.Crypto().execute(ctx), target


def test_argv_and_metric(tmp_path):
    measurement, target = run_fake(tmp_path, FakeBehaviour(duration_s=1, log=output("aes-128-gcm-16384.txt")))
    [argv] = [c for c in target.calls if c[:3] == ("sh", "-c", LAUNCH)]
    assert list(argv[argv.index("openssl"):]) == [
        "openssl", "speed", "-mr", "-elapsed", "-seconds", "1", "-bytes", "16384", "-evp", "aes-128-gcm"]
    [metric] = measurement.metrics
    assert (metric.name, metric.value, metric.unit, metric.direction) == (
        "bytes_per_s", 194926 * 16384, "bytes/s", "higher")
    assert measurement.warnings == []


def test_failures_carry_the_output(tmp_path):
    error = output("unknown-algorithm.txt")
    with pytest.raises(RunFailed) as err:
        run_fake(tmp_path / "a", FakeBehaviour(rc=1, duration_s=0.1, log=error))
    assert err.value.reason.startswith("openssl speed failed (exit status 1): ")
    assert err.value.attachments == {"openssl.log": error.encode()}
    with pytest.raises(RunFailed) as err:
        run_fake(tmp_path / "b", FakeBehaviour(duration_s=1, log="+H:16384\n"))
    assert "0 '+F:' lines" in err.value.reason and err.value.attachments == {"openssl.log": b"+H:16384\n"}


@pytest.mark.slow
def test_real_run(tmp_path):
    rc, store = run_local_campaign(tmp_path, """
[matrix]
benchmark = "crypto"
algorithm = ["aes-128-gcm", "sha256"]
block_size = "1k"
""", name="crypto", duration="1s")
    assert rc == 0
    runs = store.runs()
    assert sorted(r.param("algorithm") for r in runs) == ["aes-128-gcm", "sha256"]
    for run in runs:
        assert run.status == "ok", run.error
        assert units_and_directions(run, "bytes_per_s") == {"bytes_per_s": ("bytes/s", "higher")}
        assert run.metric("bytes_per_s", "") > 0
