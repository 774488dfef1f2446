"""Reading matrix values: canonical results and one-line errors naming the key."""

from __future__ import annotations

import pytest

from jitterlab.errors import UserError
from jitterlab.params import boolean, choice, duration, format_size, integer, size


@pytest.mark.parametrize(("text", "n"), [(64, 64), ("4k", 4096), ("16MiB", 16 << 20), ("1G", 1 << 30),
                                         ("512 B", 512)])
def test_sizes(text, n):
    assert size()(text, "k") == n


def test_format_size():
    assert [format_size(n) for n in (64, 4096, 16 << 20, 1 << 30, 1500)] == ["64B", "4k", "16M", "1G", "1500"]


@pytest.mark.parametrize(
    ("parser", "value", "expected"),
    [
        (size(hi=1 << 30), "2G", "f.toml: matrix.size: 2G is out of range; give a value between 1B and 1G"),
        (size(), "lots", "f.toml: matrix.size: cannot read size 'lots'"),
        (integer(1, 99), 0, "f.toml: matrix.size: 0 is out of range; give a value between 1 and 99"),
        (integer(1), 1.5, "expected a whole number, got 1.5"),
        (integer(1), True, "expected a whole number, got True"),
        (choice("other", "fifo"), "fifi", "unknown value 'fifi'; did you mean 'fifo'?"),
        (boolean, "yes", "expected true or false, got 'yes'"),
        (duration(lo_ns=1000), "10ns", "10ns is out of range; give a value >= 1us"),
    ],
)
def test_errors_name_the_key(parser, value, expected):
    with pytest.raises(UserError) as info:
        parser(value, "f.toml: matrix.size")
    assert expected in str(info.value)
