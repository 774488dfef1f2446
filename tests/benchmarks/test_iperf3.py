"""The iperf3 benchmark: its JSON reports (real ones from tests/data/iperf3), keys, and real runs."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import socket
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.cli.main import main
from jitterlab.measure.benchmarks import iperf3
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.measure.loads import net
from jitterlab.model.errors import RunFailed, UserError, Where
from jitterlab.model.records import Cell
from jitterlab.store.catalog import Store
from jitterlab.store.raw import read_raw
from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from tests.support import (
    campaign_from_toml,
    check_described,
    free_port,
    local_campaign,
    run_local_campaign,
    spawned_by_us,
)

DATA = Path(__file__).parent.parent / "data" / "iperf3"


def report(name: str) -> str:
    return (DATA / name).read_text()


def metrics_of(text: str) -> dict[str, tuple[float, str, str]]:
    metrics, _ = iperf3.parse_report(text)
    return {m.name: (m.value, m.unit, m.direction) for m in metrics}


# --- reports ----------------------------------------------------------------------------------------


def test_tcp_send_report():
    assert metrics_of(report("tcp-send.json")) == {
        "mbit_per_s": (30574987012.078 / 1e6, "Mbit/s", "higher"),
        "sent_mbit_per_s": (30601619503.317383 / 1e6, "Mbit/s", "none"),
        "retransmits": (1.0, "count", "lower"),
        "cpu_host_percent": (32.311349987605254, "%", "none"),
        "cpu_remote_percent": (68.177616280959128, "%", "none"),
    }
    _, series = iperf3.parse_report(report("tcp-send.json"))
    assert series["interval_bits_per_s"].unit == "bit/s"
    assert series["interval_bits_per_s"].values.tolist() == [30375454307, 30827796303]


def test_tcp_receive_and_parallel_reports_use_the_receivers_totals():
    assert metrics_of(report("tcp-recv.json"))["mbit_per_s"][0] == 39919333575.9971 / 1e6
    data = json.loads(report("tcp-send-p2.json"))
    assert data["start"]["test_start"]["num_streams"] == 2
    got = metrics_of(report("tcp-send-p2.json"))
    assert got["mbit_per_s"][0] == data["end"]["sum_received"]["bits_per_second"] / 1e6


@pytest.mark.parametrize("name", ["udp-send.json", "udp-recv.json"])
def test_udp_reports_give_jitter_and_loss(name):
    got = metrics_of(report(name))
    received = json.loads(report(name))["end"]["sum_received"]
    assert got["jitter_ns"] == (received["jitter_ms"] * 1e6, "ns", "lower")
    assert got["loss_ratio"] == (0.0, "fraction", "lower")
    assert got["lost_packets"] == (0.0, "count", "lower")
    assert got["packets"] == (763.0, "count", "none")
    assert got["mbit_per_s"] == (received["bits_per_second"] / 1e6, "Mbit/s", "higher")
    assert "retransmits" not in got


def test_udp_loss_is_over_what_was_sent_when_the_last_datagrams_are_lost():
    # iperf3 3.12, -u -b 2G on loopback: 7625 datagrams sent, the receiver's highest sequence number
    # 7602 (the last 23 lost), 1450 lost before it. Over the receiver's count the loss read 0.19074
    end = json.loads(report("udp-tail-loss.json"))["end"]
    assert (end["sum_sent"]["packets"], end["sum_received"]["packets"]) == (7625, 7602)
    got = metrics_of(report("udp-tail-loss.json"))
    assert got["loss_ratio"] == (1450 / 7625, "fraction", "lower")
    assert got["loss_ratio"][0] == pytest.approx(end["sum_received"]["lost_percent"] / 100, rel=1e-12)
    assert got["lost_packets"] == (1450.0, "count", "lower") and got["packets"] == (7625.0, "count", "none")


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("error-refused.json", "iperf3 says: unable to connect to server: Connection refused"),
        ("error-busy.json", "iperf3 says: the server is busy running a test. try again later"),
    ],
)
def test_an_error_report_is_run_failed_with_its_text(name, reason):
    with pytest.raises(RunFailed) as err:
        iperf3.parse_report(report(name))
    assert err.value.reason == reason
    assert err.value.attachments == {"iperf3-client.json": report(name).encode()}


def test_cut_short_and_garbled_reports_fail_clearly():
    text = report("tcp-send.json")
    with pytest.raises(RunFailed, match="printed no JSON report") as err:
        iperf3.parse_report(text[: len(text) // 2])
    assert err.value.attachments["iperf3-client.json"] == text[: len(text) // 2].encode()
    with pytest.raises(RunFailed, match="printed no JSON report"):
        iperf3.parse_report("iperf3: error - unable to connect\n")
    data = json.loads(text)
    del data["end"]["sum_received"]
    with pytest.raises(RunFailed, match=r"lacks the expected totals .*end.sum_received"):
        iperf3.parse_report(json.dumps(data))
    data = json.loads(report("udp-send.json"))
    data["end"]["sum_received"]["packets"] = 0
    with pytest.raises(RunFailed, match="no UDP datagram arrived") as err:
        iperf3.parse_report(json.dumps(data))
    assert err.value.status == "unmeasurable"


# --- keys ---------------------------------------------------------------------------------------------


def campaign_of(matrix: str, duration: str = "2s"):
    return campaign_from_toml("iperf3", matrix, duration=duration)


def test_defaults_and_canonical_values():
    [cell] = campaign_of("").cells
    assert dict(cell.params) == {"protocol": "tcp", "direction": "send", "bitrate": "auto", "parallel": 1,
                                 "length": "auto", "port": 15211, "peer": ""}
    [cell] = campaign_of('protocol = "udp"\nbitrate = "2.5M"\nlength = "1k"\npeer = "h:5201"').cells
    assert cell.param("bitrate") == 2_500_000 and cell.param("length") == 1024
    assert iperf3.split_peer("h:5201", 15211) == ("h", 5201)
    assert iperf3.split_peer("[fe80::1]:7", 15211) == ("fe80::1", 7)
    assert iperf3.split_peer("fe80::1", 15211) == ("fe80::1", 15211)
    assert iperf3.split_peer("192.0.2.1", 15211) == ("192.0.2.1", 15211)
    assert iperf3.show_bitrate(100_000_000) == "100M" and iperf3.show_bitrate(0) == "unlimited"


@pytest.mark.parametrize(
    ("matrix", "duration", "message"),
    [
        ('protocol = "sctp"', "2s", "c.toml: matrix.protocol: unknown value 'sctp'"),
        ('bitrate = "fast"', "2s", "c.toml: matrix.bitrate: expected bits per second"),
        ('peer = "-x"', "2s", "c.toml: matrix.peer: expected \"\""),
        ('peer = "h:99999"', "2s", "c.toml: matrix.peer: expected \"\""),
        ("parallel = 0", "2s", "c.toml: matrix.parallel: 0 is out of range"),
        ('protocol = "udp"\nlength = "64k"', "2s", "c.toml: matrix.length: a UDP datagram carries at most"),
    ],
)
def test_bad_keys_are_user_errors(matrix, duration, message):
    with pytest.raises(UserError) as err:
        campaign_of(matrix, duration)
    assert str(err.value).startswith(message)


def test_client_argv():
    campaign = campaign_of('protocol = "udp"\ndirection = "receive"\nparallel = 2\nlength = 1400')
    [cell] = campaign.cells
    ctx = RunContext(
        FakeTarget(), campaign.settings, cell, 0, "/s", Path("/l"), "/b", Placement(None, None), True)
    assert iperf3.Iperf3().client_argv(ctx, "127.0.0.1", 15211) == [
        "iperf3", "-c", "127.0.0.1", "-p", "15211", "-t", "2", "-P", "2", "--connect-timeout", "3000",
        "--json", "-u", "-b", "1000000000", "-l", "1400", "-R"]
    [tcp] = campaign_of("").cells
    assert "-b" not in iperf3.Iperf3().client_argv(dataclasses.replace(ctx, cell=tcp), "h", 1)


def test_a_peer_that_does_not_answer_is_refused_before_the_campaign():
    campaign = campaign_of('peer = ["192.0.2.7:5201", "192.0.2.8"]')
    target = FakeTarget()
    # iperf3 --json exits 0 even when it could not connect: the report's "error" tells
    target.respond(["iperf3"], response=Completed((), 0, report("error-refused.json"), ""))
    with pytest.raises(UserError) as err:
        iperf3.Iperf3().preflight(target, campaign.settings, campaign.cells, Where("c.toml", ("matrix",)))
    assert str(err.value).startswith("c.toml: matrix.peer: 192.0.2.7:5201 does not answer iperf3")
    assert "Connection refused" in str(err.value) and "iperf3 -s -p 5201" in str(err.value)
    loopback = campaign_of("")
    iperf3.Iperf3().preflight(FakeTarget(), loopback.settings, loopback.cells, Where("c.toml", ("matrix",)))


def test_net_load_preflight_sees_the_error_of_a_zero_exit_report():
    target = FakeTarget()
    target.respond(["iperf3"], response=Completed((), 0, report("error-refused.json"), ""))
    with pytest.raises(UserError, match="does not answer iperf3 .*Connection refused"):
        net.preflight(target, {"peer": "192.0.2.7"}, "c.toml:loads.net")


# --- real runs ------------------------------------------------------------------------------------------

needs_iperf3 = pytest.mark.skipif(shutil.which("iperf3") is None, reason="no iperf3 (scripts/install-deps)")


def run_campaign(tmp_path: Path, matrix: str, load: str = "idle") -> tuple[int, Store]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    return run_local_campaign(tmp_path, f'[matrix]\nbenchmark = "iperf3"\nload = "{load}"\n{matrix}',
                              name="iperf3-e2e", duration="1s", warmup="1ms", load_warmup="200ms",
                              run_timeout="10s")


@pytest.mark.slow
@needs_iperf3
def test_tcp_and_udp_on_loopback_end_to_end(tmp_path):
    port = free_port(socket.SOCK_STREAM)
    rc, store = run_campaign(tmp_path, f'protocol = ["tcp", "udp"]\nbitrate = ["auto"]\nport = {port}')
    assert rc == 0
    runs = {r.param("protocol"): r for r in store.runs()}
    assert set(runs) == {"tcp", "udp"}
    for protocol, run in runs.items():
        assert run.status == "ok", run.error
        assert run.metric("mbit_per_s") > 0
        check_described(run)
        series = read_raw(store.root / run.raw_path)
        assert series["interval_bits_per_s"].unit == "bit/s" and len(series["interval_bits_per_s"]) >= 1
        sent = json.loads((store.root / run.attachments["iperf3-client.json"]).read_text())
        assert sent["start"]["test_start"]["protocol"] == protocol.upper()
    assert runs["tcp"].metrics[("", "retransmits")].direction == "lower"
    assert runs["udp"].metrics[("", "jitter_ns")].unit == "ns"
    assert 0 <= runs["udp"].metric("loss_ratio") <= 1
    assert spawned_by_us() == []
    assert os.listdir(tmp_path / "target" / "live") == []


@pytest.mark.slow
@needs_iperf3
def test_a_port_in_use_fails_the_run_with_iperf3s_reason(tmp_path):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # bound, not listening: iperf3's own bind fails
        port = sock.getsockname()[1]
        rc, store = run_campaign(tmp_path, f"port = {port}")
        sock.listen()  # another server: refused before iperf3 starts
        rc2, store2 = run_campaign(tmp_path / "2", f"port = {port}")
    [run] = store.runs()
    assert rc == 1 and run.status == "failed"
    assert f"iperf3 server on port {port} exited" in run.error and "Address already in use" in run.error
    assert "iperf3-server.json" in run.attachments
    [run] = store2.runs()
    assert rc2 == 1 and run.status == "failed"
    assert run.error == f"port {port} is already in use on the target; set matrix.port to a free one"
    assert spawned_by_us() == []


def test_registered_with_its_tool():
    bench = plugins.BENCHMARKS.get("iperf3", "t")
    assert bench.tools(Cell("local", "iperf3", "idle"))["iperf3"] == "iperf3"


@pytest.mark.slow
@needs_iperf3
def test_run_refuses_a_peer_without_a_server_before_measuring(tmp_path, capsys):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))  # a port nobody listens on
        port = sock.getsockname()[1]
        path = local_campaign(tmp_path, f'[matrix]\nbenchmark = "iperf3"\npeer = "127.0.0.1:{port}"',
                              name="p", duration="1s", repetitions=None)
        rc = main(["run", str(path), "--results", str(tmp_path / "results")])
    assert rc == 2
    err = capsys.readouterr().err
    assert f"matrix.peer: 127.0.0.1:{port} does not answer iperf3" in err and "Connection refused" in err
    assert not (tmp_path / "results" / "results.sqlite").exists()


def test_the_image_comparison_example():
    from jitterlab.campaign.file import load_campaign

    campaign = load_campaign(Path(__file__).parent.parent.parent / "examples" / "image-compare.toml")
    assert campaign.labels == {"image": "A"}
    cells = [(c.benchmark, c.load, c.param("protocol"), c.param("bitrate")) for c in campaign.cells]
    assert sorted(cells, key=str) == sorted([
        ("sysbench-cpu", "idle", None, None), ("sysbench-cpu", "idle", None, None),
        ("iperf3", "idle", "tcp", "auto"), ("iperf3", "net", "tcp", "auto"),
        ("iperf3", "idle", "udp", 100_000_000), ("iperf3", "net", "udp", 100_000_000)], key=str)


@pytest.mark.parametrize(
    ("duration_ns", "seconds"), [(300_000_000, 1), (1_000_000_000, 1), (1_500_000_000, 2)]
)
def test_duration_is_rounded_up_to_whole_seconds(duration_ns, seconds):
    from jitterlab.measure.benchmarks.iperf3 import _seconds

    assert _seconds(duration_ns) == seconds
