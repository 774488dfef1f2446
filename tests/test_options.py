"""Typed option records (model/options.py): every plug-in's record reads what its Params give."""

import tomllib
from dataclasses import dataclass
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.campaign.file import parse_campaign
from jitterlab.model.errors import UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param

RECORDED = [(kind, e.name, e.obj) for kind in ("benchmarks", "probes", "pins", "loads")
            for e in plugins.ALL[kind] if e.obj.record is not None]


def _values(params: tuple[Param, ...], *, examples: bool = False) -> dict:
    """Each Param's default, else its example (the first of a list), read by its parser; with
    `examples`, each example (where a default is a word like "auto", the example is a number)."""
    values = {}
    for p in params:
        use_default = p.default is not None and not examples
        given = p.default if use_default else tomllib.loads(f"v = {p.example}")["v"]
        if isinstance(given, list) and not p.whole:
            given = given[0]
        values[p.name] = p.parse(given, f"test.{p.name}")
    return values


def test_the_typed_records_are_many():
    # squarewave, its probes and pins, the benchmarks that read their matrix keys as numbers, and
    # every load with options
    assert {("benchmarks", n) for n in ("squarewave", "cyclictest", "udp-echo", "hwlat", "timerlat",
                                          "osnoise", "membw", "disk", "iperf3", "ssh-transfer", "pps",
                                          "crypto")} <= {(kind, name) for kind, name, _ in RECORDED}
    assert {("probes", "sigrok"), ("probes", "scpi"), ("pins", "gpiomem"), ("pins", "gpiod"),
            ("pins", "sysfs")} <= {(kind, name) for kind, name, _ in RECORDED}
    recorded_loads = {name for kind, name, _ in RECORDED if kind == "loads"}
    assert {"cpu", "memory", "disk", "net", "sched"} <= recorded_loads
    assert {e.name for e in plugins.ALL["loads"] if e.obj.params} <= recorded_loads, "a load's options cast"


@pytest.mark.parametrize("examples", [False, True], ids=["defaults", "examples"])
@pytest.mark.parametrize(("kind", "name", "plugin"), RECORDED, ids=[f"{k}:{n}" for k, n, _ in RECORDED])
def test_a_record_reads_every_key_of_its_params_as_its_parser_gives_it(kind, name, plugin, examples):
    assert set(plugin.record.keys().values()) <= {p.name for p in plugin.params}, "a field with no Param"
    values = _values(plugin.params, examples=examples)
    record = plugin.record.of(values)
    for field, option in plugin.record.keys().items():
        assert getattr(record, field) == values[option]


def test_a_record_at_odds_with_its_values_is_a_bug_not_a_user_error():
    @dataclass(frozen=True)
    class Wrong(Options):
        period_ns: int = key("period")

    assert Wrong.of({"period": 10}).period_ns == 10
    with pytest.raises(TypeError, match="period_ns: option 'period' is '10ms'"):
        Wrong.of({"period": "10ms"})
    with pytest.raises(TypeError, match="no value of option 'period'"):
        Wrong.of({})
    with pytest.raises(TypeError):
        Wrong.of({"period": True})  # a bool is no count


def test_a_bad_value_is_still_one_line_naming_its_key_when_the_campaign_is_read():
    text = ('[campaign]\nname = "x"\n[matrix]\nbenchmark = "hwlat"\nwidth = "1s"\nwindow = "1s"\n')
    with pytest.raises(UserError, match=r"^c.toml: matrix.width: 1s must be shorter than the window 1s$"):
        parse_campaign(tomllib.loads(text), Path("c.toml"))


@pytest.mark.parametrize(("fields", "said"), [
    ({"direction": "up"}, "metric m: direction 'up'"),
    ({"summary": "mean"}, "metric m: summary 'mean'"),
    ({"scale": "log"}, "metric m: scale 'log'"),
    ({"stat": "p42"}, "metric m: stat 'p42'"),
])
def test_a_metric_declaring_a_word_the_readings_do_not_know_is_refused_naming_its_field(fields, said):
    from jitterlab.model.records import Metric

    with pytest.raises(ValueError) as refused:
        Metric("m", 1.0, "ns", **fields)
    assert str(refused.value) == said
    assert Metric("m", 1.0, "ns", direction="lower", summary="worst", scale="ratio", stat="p99").stat == "p99"
