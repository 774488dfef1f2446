"""udp-echo: the client's output parser on real captures, the matrix keys, and every policy end to end."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from jitterlab import plugins
from jitterlab.campaign.file import parse_campaign
from jitterlab.measure.benchmarks.udp_echo import UdpEcho, deadline_params, parse_client_output, sched_flags
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import RunSettings
from jitterlab.model.series import Samples
from jitterlab.store.raw import read_raw
from tests.support import (
    campaign_from_dict,
    check_described,
    free_port,
    processes_mentioning,
    run_local_campaign,
)

DATA = Path(__file__).parent.parent / "data" / "udp-echo-client"
FIFO = (DATA / "fifo-64B-1ms.txt").read_text()
MIDWAY = (DATA / "server-gone-midway.txt").read_text()
POLICIES = ["other", "fifo", "rr", "deadline"]


# --- the parser, on outputs captured on this machine ---------------------------------------------

def test_parses_a_real_capture_exactly():
    result = parse_client_output(FIFO)
    assert (result.sent, result.received, result.lost, result.late) == (200, 200, 0, 0)
    assert result.rtt_ns.dtype == np.int64 and len(result.rtt_ns) == 200
    assert result.rtt_ns[:3].tolist() == [44323, 156183, 49383]
    assert result.rtt_ns[-1] == 48782
    assert result.header == {"clock": "monotonic", "size": "64", "interval_ns": "1000000",
                             "timeout_ns": "100000000", "policy": "fifo"}


def test_parses_lost_and_late_replies():
    result = parse_client_output(MIDWAY)
    assert (result.sent, result.received, result.lost, result.late) == (150, 66, 84, 1)
    assert result.header["size"] == "512"
    empty = parse_client_output((DATA / "no-server.txt").read_text())
    assert (empty.sent, empty.received, empty.lost, len(empty.rtt_ns)) == (3, 0, 3, 0)


@pytest.mark.parametrize("cut", range(0, len(FIFO) - 1, 13))
def test_every_truncation_is_refused_with_the_output_attached(cut):
    with pytest.raises(RunFailed) as caught:
        parse_client_output(FIFO[:cut])
    assert caught.value.reason.startswith("udp-echo-client output does not parse: ")
    assert caught.value.attachments == {"udp-echo-client.out": FIFO[:cut].encode()}


@pytest.mark.parametrize(("old", "new", "says"), [
    ("\n156183\n", "\n156x83\n", "a round-trip line is not a whole number of ns"),
    ("\n156183\n", "\n-156183\n", "a round-trip line is not a whole number of ns"),
    ("\n156183\n", "\n156183 7\n", "a round-trip line is not a whole number of ns"),
    ("\n156183\n", "\n", "199 round trips for received=200"),
    ("received=200 lost=0", "received=200 lost=3", "200 round trips for received=200 sent=200 lost=3"),
    ("# jitterlab-udp-echo v1", "# jitterlab-udp-echo v2", "first line is '# jitterlab-udp-echo v2"),
    ("late=0", "late=?", "the '# end' line is missing or garbled"),
])
def test_garbled_output_is_refused(old, new, says):
    text = FIFO.replace(old, new, 1)
    with pytest.raises(RunFailed) as caught:
        parse_client_output(text)
    assert says in caught.value.reason
    assert caught.value.attachments["udp-echo-client.out"] == text.encode()


def test_no_reply_at_all_is_unmeasurable():
    with pytest.raises(RunFailed) as caught:
        UdpEcho._measurement((DATA / "no-server.txt").read_text(), 2_000_000, [])
    assert caught.value.status == "unmeasurable"
    assert caught.value.reason.startswith("no echo came back: all 3 messages were lost (timeout 2ms)")


def test_metrics_units_and_directions_from_a_capture():
    m = UdpEcho._measurement(MIDWAY, 2_000_000, [])
    by_name = {x.name: x for x in m.metrics}
    assert by_name["rtt_samples"].value == 66 and by_name["rtt_samples"].direction == "none"
    assert by_name["rtt_p50_ns"].unit == "ns" and by_name["rtt_p99_ns"].direction == "lower"
    assert (by_name["lost_messages"].value, by_name["lost_messages"].unit) == (84, "count")
    assert by_name["lost_messages"].direction == by_name["late_replies"].direction == "lower"
    assert (by_name["messages"].value, by_name["messages"].direction) == (150, "none")
    assert all(x.unit and x.direction for x in m.metrics)
    assert isinstance(m.series["rtt"], Samples) and m.series["rtt"].unit == "ns"
    assert [w.message for w in m.warnings] == ["84 of 150 messages got no reply within 2ms"]


# --- policies and matrix keys --------------------------------------------------------------------

def test_scheduling_flags_per_policy():
    assert sched_flags("other", 80, 1_000_000) == []
    assert sched_flags("fifo", 70, 1_000_000) == ["--policy", "fifo", "--prio", "70"]
    assert sched_flags("rr", 99, 0) == ["--policy", "rr", "--prio", "99"]
    assert deadline_params(2_000_000) == (1_000_000, 2_000_000)
    assert deadline_params(0) == (500_000, 1_000_000)  # back to back: a 1 ms period
    assert sched_flags("deadline", 80, 400_000) == [
        "--policy", "deadline", "--dl-runtime-ns", "200000", "--dl-period-ns", "400000"]


def _campaign(matrix: dict, target: dict | None = None):
    return campaign_from_dict("udp-echo", matrix, target)


def test_defaults_and_canonical_values():
    [cell] = _campaign({}).cells
    assert dict(cell.params) == {"size": 64, "interval": 1_000_000, "count": 0, "timeout": 100_000_000,
                                 "policy": "other", "priority": 80, "client": "target", "host": "",
                                 "port": 15301}
    cells = _campaign({"policy": POLICIES, "size": [64, "1k"], "interval": "0"}).cells
    assert len(cells) == 8 and {c.param("interval") for c in cells} == {0}
    bench = plugins.BENCHMARKS.get("udp-echo", "t")
    assert [(c.param("policy"), bench.needs_rt(c)) for c in cells[:4]] == [
        ("other", False), ("fifo", True), ("rr", True), ("deadline", True)]
    assert bench.label(cells[0]) == "udp-echo 64B other back to back idle (client on target)"


@pytest.mark.parametrize(("matrix", "target", "says"), [
    ({"policy": "batch"}, None, "matrix.policy: unknown value 'batch'"),
    ({"size": 8}, None, "matrix.size: 8B is out of range"),
    ({"priority": 0}, None, "matrix.priority: 0 is out of range"),
    ({"client": "controller"}, {"name": "b", "kind": "ssh", "host": "b"},
     "matrix.host: client = \"controller\" sends to the target over the network; give target 'b'"),
    ({"host": "board.lan"}, None, "matrix.host: with client = \"target\" the host is an address"),
    ({"host": "-x"}, None, "matrix.host: expected a host name or address"),
    ({"interval": "1"}, None, "matrix.interval: cannot read duration '1'"),
])
def test_bad_keys_are_user_errors(matrix, target, says):
    with pytest.raises(UserError) as caught:
        _campaign(matrix, target)
    assert says in str(caught.value)


# --- end to end ----------------------------------------------------------------------------------

def _deadline_period_min_us() -> int:
    try:
        return int(Path("/proc/sys/kernel/sched_deadline_period_min_us").read_text())
    except OSError:
        return 0


@pytest.mark.slow
def test_every_policy_end_to_end(tmp_path):
    """Each policy runs where the kernel allows it; a refused one fails with the kernel's reason
    and the others go on. A deadline period under the kernel's minimum is always refused."""
    refused_interval = '"50us"' if _deadline_period_min_us() > 50 else None
    extra = f"""
[[matrix]]
benchmark = "udp-echo"
policy = "deadline"
interval = {refused_interval}
""" if refused_interval else ""
    port = free_port()
    matrix = f"""
[[matrix]]
benchmark = "udp-echo"
policy = {POLICIES!r}
size = 200
port = {port}
[[matrix]]
benchmark = "udp-echo"
client = "controller"
port = {port}
{extra}""".replace("'", '"')
    rc, store = run_local_campaign(tmp_path, matrix, file="udp.toml", name="udp", duration="300ms",
                                   warmup="20ms", run_timeout="5s")
    results = tmp_path / "results"
    runs = store.runs()
    assert len(runs) == 5 + bool(refused_interval)
    refused = []
    for run in runs:
        if run.status != "ok":
            assert run.param("policy") == "deadline", (run.cell_key, run.error)
            assert run.error.startswith("SCHED_DEADLINE refused by the kernel: "), run.error
            refused.append(run)
            continue
        assert run.param("policy") in POLICIES
        names = {name for _, name in run.metrics}
        assert {"rtt_p50_ns", "rtt_p99_ns", "rtt_max_ns", "lost_messages", "messages"} <= names
        check_described(run)
        assert run.metrics[("", "rtt_p50_ns")].unit == "ns"
        assert run.metrics[("", "messages")].direction == "none"
        [series] = read_raw(results / run.raw_path, expected_sha256=run.raw_sha256).values()
        assert isinstance(series, Samples) and series.unit == "ns"
        assert len(series) == run.metric("rtt_samples", "") > 0
    if refused_interval:
        assert any(r.param("interval") == 50_000 for r in refused)
        assert "sched_deadline_period" in next(r.error for r in refused if r.param("interval") == 50_000)
    assert rc == (1 if refused else 0)
    assert processes_mentioning(str(tmp_path)) == []
    assert not list((tmp_path / "target" / "live").glob("*.pid")), "a process record was left"


class _Remote:
    """A local target that does not say it is the controller (it declares no ControllerMachine):
    the client must go to the controller."""

    def __init__(self, inner) -> None:
        self._inner = inner
        self.name, self.workdir = inner.name, inner.workdir

    def __getattr__(self, name: str):
        return getattr(self._inner, name)


def _controller_context(target, tmp_path, controller=None):
    from jitterlab.measure.benchmarks.base import Placement, RunContext

    cell = campaign_from_dict("udp-echo", {"client": "controller", "host": "127.0.0.1"}).cells[0]
    return RunContext(target, RunSettings(), cell, 0, "/s", tmp_path, "/b", Placement(None, None), True,
                      controller=controller)


def test_the_controller_side_is_the_target_itself_when_it_is_the_controller(tmp_path):
    from jitterlab.measure.udp.programs import controller_side
    from jitterlab.targets.local import LocalTarget

    local = LocalTarget("here", str(tmp_path / "w"))
    with controller_side(_controller_context(local, tmp_path)) as side:
        assert (side.target, side.bindir, side.scratch, side.is_controller) == (local, "/b", "/s", True)


def test_a_controller_that_cannot_build_the_programs_makes_the_cell_unavailable(tmp_path):
    from jitterlab.measure.udp.programs import controller_side
    from jitterlab.targets.capabilities import BuildsProgramsOnDemand, Wrapper
    from jitterlab.targets.local import LocalTarget
    from jitterlab.targets.unreachable import UnreachableTarget

    # a target that is not the controller (nothing is run on it here)
    board, here = UnreachableTarget("board", "elsewhere"), LocalTarget("controller", str(tmp_path / "w"))
    for controller, said in (
        (None, "no controller was given to this run: the client end"),
        (here, "target 'controller' cannot build jitterlab's programs when a run asks"),
    ):
        ctx = _controller_context(board, tmp_path, controller)
        with pytest.raises(RunFailed) as info, controller_side(ctx):
            pass
        assert info.value.status == "unavailable" and info.value.reason.startswith(said)

    class Builds(Wrapper, BuildsProgramsOnDemand):
        def programs_dir(self) -> str:
            return "/opt/jl"

    with controller_side(_controller_context(board, tmp_path, Builds(here))) as side:
        assert (side.bindir, side.scratch) == ("/opt/jl", str(tmp_path / "controller")) and side.is_controller
        assert side.target.name == "controller" and (tmp_path / "controller").is_dir()


@pytest.mark.slow
def test_client_on_the_controller_of_a_remote_target(tmp_path):
    from jitterlab.execution.controller import Controller
    from jitterlab.execution.deploy import deploy
    from jitterlab.measure.benchmarks.base import Placement, RunContext
    from jitterlab.targets.local import LocalTarget

    target = _Remote(LocalTarget("board", str(tmp_path / "board")))
    controller = Controller(LocalTarget("controller", str(tmp_path / "controller-workdir")))
    campaign = parse_campaign(
        {"campaign": {"name": "t", "duration": "200ms", "warmup": "10ms"},
         "matrix": {"benchmark": "udp-echo", "client": "controller", "host": "127.0.0.1",
                    "policy": "fifo", "port": 15312}},
        Path("c.toml"),
    )
    scratch = tmp_path / "board" / "run"
    scratch.mkdir(parents=True)
    (tmp_path / "local").mkdir()
    ctx = RunContext(
        target, campaign.settings, campaign.cells[0], 0, str(scratch), tmp_path / "local",
                     deploy(target).bindir, Placement(None, None), rt_permitted=True, controller=controller)
    try:
        m = UdpEcho().execute(ctx)
    finally:
        target.close()
        controller.close()
    by_name = {x.name: x.value for x in m.metrics}
    assert by_name["messages"] > 0 and by_name["rtt_samples"] > 0
    assert (tmp_path / "local" / "controller" / "rtt.txt").exists()  # written on the controller
    assert not (scratch / "rtt.txt").exists()
    assert processes_mentioning(str(tmp_path)) == []
