"""pps: the stats parsers on real captures, the metrics, the matrix keys, and a run end to end."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.measure.benchmarks.pps import Pps, parse_stats, pps_metrics
from jitterlab.model.errors import RunFailed, UserError
from tests.support import (
    campaign_from_dict,
    free_port,
    processes_mentioning,
    run_local_campaign,
    units_and_directions,
)

DATA = Path(__file__).parent.parent / "data" / "pps"
SEND = (DATA / "send.stats").read_text()
RECV = (DATA / "recv.stats").read_text()


def test_parses_real_stats_exactly():
    assert parse_stats(SEND, "pps-send") == {
        "sent": 19424, "bytes": 1243136, "elapsed_ns": 300026838, "send_errors": 0}
    assert parse_stats(RECV, "pps-recv") == {
        "received": 19424, "bytes": 1243136, "first_ns": 2960748105490, "last_ns": 2961041649387,
        "drops": 0, "rcvbuf": 8388608}


@pytest.mark.parametrize(("name", "text", "says"), [
    ("pps-send", "", "it is empty"),
    ("pps-send", SEND[:40], "no whole number for elapsed_ns, send_errors"),
    ("pps-send", SEND.replace("sent=19424", "sent=19x24"), "no whole number for sent"),
    ("pps-send", SEND.replace("sent=19424", "sent=-5"), "no whole number for sent"),
    ("pps-send", SEND + SEND, "expected one line"),
    ("pps-recv", SEND, "got 'jitterlab-pps-send v1"),
    ("pps-recv", RECV.replace(" v1 ", " v2 "), "got 'jitterlab-pps-recv v2"),
    ("pps-recv", RECV.replace("drops=0 ", ""), "no whole number for drops"),
])
def test_garbled_stats_are_refused_with_the_text_attached(name, text, says):
    with pytest.raises(RunFailed) as caught:
        parse_stats(text, name)
    assert caught.value.reason.startswith(f"{name} stats do not parse")
    assert says in caught.value.reason
    assert caught.value.attachments == {f"{name}.stats": text.encode()}


def test_metrics_are_rates_over_the_senders_time():
    sent = {"sent": 1000, "bytes": 64000, "elapsed_ns": 500_000_000, "send_errors": 2}
    received = {"received": 750, "bytes": 48000, "first_ns": 1, "last_ns": 2, "drops": 250, "rcvbuf": 1}
    m = {x.name: x for x in pps_metrics(sent, received)}
    def described(name: str) -> tuple:
        return m[name].value, m[name].unit, m[name].direction

    assert described("sent_pps") == (2000, "packets/s", "higher")
    assert (m["received_pps"].value, m["received_pps"].direction) == (1500, "higher")
    assert described("loss_ratio") == (0.25, "fraction", "lower")
    assert m["received_mbit_per_s"].value == pytest.approx(0.768)
    assert (m["sent_packets"].value, m["sent_packets"].direction) == (1000, "none")
    assert (m["received_packets"].value, m["received_packets"].unit) == (750, "count")
    assert (m["socket_drops"].value, m["send_errors"].value) == (250, 2)
    with pytest.raises(RunFailed, match="pps-send sent nothing"):
        pps_metrics({**sent, "sent": 0}, received)


def _campaign(matrix: dict, target: dict | None = None):
    return campaign_from_dict("pps", matrix, target)


def test_defaults():
    [cell] = _campaign({}).cells
    assert dict(cell.params) == {"size": 64, "rate": 0, "batch": 32, "direction": "loopback",
                                 "host": "", "port": 15401}
    assert Pps().label(cell) == "pps 64B max x32 loopback idle"


@pytest.mark.parametrize(("matrix", "target", "says"), [
    ({"batch": 0}, None, "matrix.batch: 0 is out of range"),
    ({"direction": "sideways"}, None, "matrix.direction: unknown value 'sideways'"),
    ({"direction": "receive"}, {"name": "b", "kind": "ssh", "host": "b"},
     "matrix.host: direction = \"receive\" needs target 'b''s address"),
    ({"direction": "send"}, {"name": "b", "kind": "ssh", "host": "b"},
     "needs the controller's address as the target reaches it"),
    ({"direction": "send", "host": "laptop.lan"}, None, "give a numeric address"),
])
def test_bad_keys_are_user_errors(matrix, target, says):
    with pytest.raises(UserError) as caught:
        _campaign(matrix, target)
    assert says in str(caught.value)


@pytest.mark.slow
def test_pps_end_to_end(tmp_path):
    rc, store = run_local_campaign(tmp_path, f"""
[matrix]
benchmark = "pps"
direction = ["loopback", "receive"]
rate = [0, 20000]
port = {free_port()}
""", file="pps.toml", name="pps", duration="300ms", run_timeout="5s")
    assert rc == 0
    runs = store.runs()
    assert len(runs) == 4
    for run in runs:
        assert run.status == "ok", run.error
        assert run.metric("sent_packets", "") > 0
        assert 0 <= run.metric("loss_ratio", "") <= 1
        assert run.metric("received_packets", "") <= run.metric("sent_packets", "")
        assert units_and_directions(run, "sent_pps", "received_pps", "loss_ratio", "sent_packets") == {
            "sent_pps": ("packets/s", "higher"), "received_pps": ("packets/s", "higher"),
            "loss_ratio": ("fraction", "lower"), "sent_packets": ("count", "none"),
        }
        assert run.raw_path is None
    assert processes_mentioning(str(tmp_path)) == []
    assert not list((tmp_path / "target" / "live").glob("*.pid"))
