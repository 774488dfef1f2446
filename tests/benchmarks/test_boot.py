"""boot: `systemd-analyze time` outputs (tests/data/systemd-analyze), and the unavailable path."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import boot
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from tests.support import campaign_from_toml, own_metrics, run_local_campaign

DATA = Path(__file__).parent.parent / "data" / "systemd-analyze"
S, MS = 1_000_000_000, 1_000_000


def output(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("efi-initrd.txt", {"firmware": 14608 * MS, "loader": 3378 * MS, "kernel": 3817 * MS,
                            "initrd": 5640 * MS, "userspace": 1423 * MS, "total": 28868 * MS}),
        ("minutes.txt", {"firmware": 28 * 60 * S + 31090 * MS, "loader": 132 * MS, "kernel": 990 * MS,
                         "initrd": 1663 * MS, "userspace": 6042 * MS, "total": 28 * 60 * S + 39918 * MS}),
        ("no-initrd.txt", {"firmware": 11035 * MS, "loader": 1481 * MS, "kernel": 2093 * MS,
                           "userspace": 8813 * MS, "total": 23423 * MS}),
        # a container: userspace only, no total printed; the total is the sum of what is shown
        ("container.txt", {"userspace": 555 * MS, "total": 555 * MS}),
    ],
)  # fmt: skip
def test_outputs(name, expected):
    assert boot.parse_time(output(name)) == expected


def test_time_spans():
    assert boot.parse_timespan_ns("950\u03bcs") == 950_000  # systemd's UTF-8 micro (Greek mu)
    assert boot.parse_timespan_ns("950us") == 950_000
    assert boot.parse_timespan_ns("1h 2min 3.5s") == 3723 * S + 500 * MS
    assert boot.parse_timespan_ns("0") == 0
    with pytest.raises(ValueError):
        boot.parse_timespan_ns("3.5 s")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        (output("not-booted-with-systemd.txt"), "printed no 'Startup finished in ... (userspace)' line"),
        (output("efi-initrd.txt")[:60], "printed no 'Startup finished in ... (userspace)' line"),
        (output("efi-initrd.txt").replace("(loader)", "(bootloader)"), "unexpected phases"),
        (output("efi-initrd.txt").replace("3.378s", "3.378 s"), "cannot read the phases"),
        (output("efi-initrd.txt").replace("(loader)", "(kernel)"), "unexpected phases"),
    ],
)
def test_garbled_outputs_fail_clearly(text, reason):
    with pytest.raises(RunFailed) as err:
        boot.parse_time(text)
    assert reason in err.value.reason


def campaign_of(load: str = "idle"):
    return campaign_from_toml("boot", f'load = "{load}"')


def test_a_load_is_refused():
    with pytest.raises(UserError, match=r'^c.toml: matrix.load: boot reads the times of the last boot'):
        campaign_of("cpu")


def execute(target: FakeTarget, tmp_path: Path):
    campaign = campaign_of()
    ctx = RunContext(
        target, campaign.settings, campaign.cells[0], 0, str(tmp_path), tmp_path, "/b",
                     Placement(None, None), True)
    return boot.Boot().execute(ctx)


def systemd_target(**answer) -> FakeTarget:
    target = FakeTarget()
    target.respond(["test", "-d", "/run/systemd/system"], "")
    target.respond(["systemd-analyze", "time"], response=Completed((), **answer))
    return target


def test_metrics_from_systemd(tmp_path):
    target = systemd_target(rc=0, stdout=output("no-initrd.txt"), stderr="")
    metrics = execute(target, tmp_path).metrics
    assert [(m.name, m.value, m.unit, m.direction) for m in metrics] == [
        ("boot_firmware_ns", 11035 * MS, "ns", "lower"),
        ("boot_loader_ns", 1481 * MS, "ns", "lower"),
        ("boot_kernel_ns", 2093 * MS, "ns", "lower"),
        ("boot_userspace_ns", 8813 * MS, "ns", "lower"),
        ("boot_total_ns", 23423 * MS, "ns", "lower"),
    ]


def test_a_boot_still_running_fails_with_a_hint(tmp_path):
    target = systemd_target(rc=1, stdout="", stderr=output("bootup-not-finished.txt"))
    with pytest.raises(RunFailed) as err:
        execute(target, tmp_path)
    assert err.value.status == "failed" and "systemctl list-jobs" in err.value.reason
    assert err.value.attachments == {"systemd-analyze.txt": output("bootup-not-finished.txt").encode()}


def test_an_unreadable_output_fails_with_it_attached(tmp_path):
    target = systemd_target(rc=0, stdout="Startup finished in soon\n", stderr="")
    with pytest.raises(RunFailed) as err:
        execute(target, tmp_path)
    assert err.value.attachments == {"systemd-analyze.txt": b"Startup finished in soon\n"}


def test_without_systemd_it_is_unavailable(tmp_path):
    target = FakeTarget()
    target.respond(["test", "-d", "/run/systemd/system"], rc=1)
    target.respond(["cat", "/proc/1/comm"], "busybox\n")
    with pytest.raises(RunFailed) as err:
        execute(target, tmp_path)
    assert err.value.status == "unavailable"
    assert err.value.reason.startswith("systemd is not running on this target (PID 1 is 'busybox')")
    assert ("systemd-analyze", "time") not in target.calls


@pytest.mark.slow
@pytest.mark.skipif(Path("/run/systemd/system").is_dir(), reason="systemd runs here: no unavailable path")
def test_real_run_here_is_unavailable(tmp_path):
    rc, store = run_local_campaign(tmp_path, '[matrix]\nbenchmark = "boot"', name="boot")
    assert rc == 1
    [run] = store.runs()
    assert run.status == "unavailable"
    assert run.error.startswith("systemd is not running on this target (PID 1 is ")
    assert own_metrics(run) == []
