"""format_value: one vocabulary of units for everything a person reads."""

from __future__ import annotations

import math

import pytest

from jitterlab.report.format import change, format_value, percent


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (40_200_000, "ns", "40.2 ms"), (184_000, "ns", "184 µs"), (523, "ns", "523 ns"),
    (4_250_000, "ns", "4.25 ms"), (1_859_000_000, "ns", "1.859 s"), (0, "ns", "0 ns"),
    (0.0025, "s", "2.5 ms"),
    (1.79, "ratio", "179 %"), (17.9, "ratio", "1,790 %"), (0.000213, "ratio", "0.0213 %"),
    (0.0, "fraction", "0 %"), (0.125, "fraction", "12.5 %"),
    (5.0, "count", "5"), (12345.0, "count", "12,345"), (4.5, "count", "4.5"),
    (27290.4, "events/s", "27,290 events/s"), (941.23, "Mbit/s", "941.2 Mbit/s"),
    (1.234e9, "bytes/s", "1.234 GB/s"), (4096.0, "bytes", "4.096 kB"),
    # one family whatever the tool's unit: mbw's MiB/s and dd's MB/s beside openssl's bytes/s
    (9317.0, "MiB/s", "9.77 GB/s"), (1581.0, "MB/s", "1.581 GB/s"), (512.0, "KiB", "524.3 kB"),
    (1.0, "GiB", "1.074 GB"),
    (12.34, "%", "12.3 %"), (1.0, "bool", "yes"), (-3.2, "ppm", "-3.2 ppm"),
    (None, "ns", "—"), (math.nan, "ratio", "—"),
])
def test_format_value_by_unit(value, unit, shown):
    assert format_value(value, unit) == shown


def test_no_scientific_notation_for_large_or_small_values():
    for value in (4.25e6, 1e-9, 123456789.0):
        for unit in ("ns", "ratio", "count", "events/s"):
            assert "e+" not in format_value(value, unit) and "e-" not in format_value(value, unit)


def test_percent_and_change():
    assert percent(0.0123) == "1.23 %" and percent(None) == "—"
    assert change(1.5) == "+50 %" and change(0.8) == "-20 %" and change(3.007) == "+201 %"
    assert change(0.25) == "-75 %" and change(1.0) == "+0 %" and change(math.inf) == "—"


@pytest.mark.parametrize(("value", "unit", "shown"), [
    (999_999.6, "ns", "1 ms"), (999_960, "ns", "1 ms"), (999_940, "ns", "999.9 µs"), (999.96, "ns", "1 µs"),
    (999_960_000, "ns", "1 s"), (999_960, "bytes", "1 MB"), (999.96, "bytes/s", "1 kB/s"),
])
def test_a_value_that_rounds_up_to_the_next_unit_is_written_in_it(value, unit, shown):
    # 999,999.6 ns read "1,000 µs" beside periods of "1 ms"
    assert format_value(value, unit) == shown
