import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.units import format_duration_s, format_ns, parse_duration_ns


@pytest.mark.parametrize(
    ("text", "ns"),
    [
        ("10s", 10**10),
        ("500ms", 5 * 10**8),
        ("50us", 50_000),
        ("50µs", 50_000),
        ("1.5ms", 1_500_000),
        ("100ns", 100),
        ("2min", 120 * 10**9),
        (".5s", 5 * 10**8),
    ],
)
def test_parse(text, ns):
    assert parse_duration_ns(text, "k") == ns


@pytest.mark.parametrize("text", ["10", "ms", "-1s", "0s", "1 sec", "1e3us", "\u0661\u0660ms", "\uff11s"])
def test_parse_rejects(text):
    with pytest.raises(UserError, match="^k: "):
        parse_duration_ns(text, "k")


@pytest.mark.parametrize(
    ("ns", "text"),
    [(100_000_000, "100ms"), (50_000, "50us"), (1_500_000, "1.5ms"), (999, "999ns"), (2_000_000_000, "2s")],
)
def test_format(ns, text):
    assert format_ns(ns) == text


@pytest.mark.parametrize(("s", "text"), [(42, "42 s"), (173.4, "2 min 53 s"), (120, "2 min"),
                                         (5400, "1 h 30 min"), (7200, "2 h")])
def test_format_duration(s, text):
    assert format_duration_s(s) == text


def test_cpu_list_is_tasksets_syntax_in_any_order():
    from jitterlab.model.units import cpu_list

    assert cpu_list([5, 0, 2, 1, 1]) == "0-2,5"
    assert cpu_list({3}) == "3"
    assert cpu_list([]) == ""
