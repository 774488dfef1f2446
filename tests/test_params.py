"""Reading matrix values: canonical results and one-line errors naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.model.params import boolean, choice, duration, format_size, integer, size


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
        # a matrix duration, like every duration of a campaign (README, "Limits"): at most a week
        (duration(), "999999h", "duration '999999h' is too long; give at most 168 h"),
    ],
)
def test_errors_name_the_key(parser, value, expected):
    with pytest.raises(UserError) as info:
        parser(value, "f.toml: matrix.size")
    assert expected in str(info.value)


def test_words_are_one_canonical_value():
    from jitterlab.model.params import show_words, word_list, words

    value = words(1)(["python3", "a b", "{x}"], "k")
    assert isinstance(value, str) and word_list(value) == ["python3", "a b", "{x}"]
    assert words()((), "k") == "[]" and show_words("[]") == "[]"
    assert show_words(value) == "python3 'a b' '{x}'"
    for bad, message in (("python3 x", "expected a list of strings"),
                         (["a", 1], "expected a list of strings"),
                         ([], "0 items is out of range; give a value >= 1 item"),
                         (["a\0b"], "a string holds a NUL byte")):
        with pytest.raises(UserError, match=f"^f.toml: matrix.argv: {message}"):
            words(1)(bad, "f.toml: matrix.argv")


def test_a_whole_key_is_never_an_axis_nor_split_by_an_exclude():
    from tests.support import campaign_from_toml

    metric = '[[matrix.metric]]\nname = "n"\nregex = "(1)"\ndirection = "none"\n'
    campaign = campaign_from_toml("command", f'name = "a"\nargv = ["echo", "1"]\nvariant = [1, 2]\n{metric}')
    assert len(campaign.cells) == 2
    import tomllib

    from jitterlab.campaign.file import parse_campaign

    text = ('[campaign]\nname = "t"\n[matrix]\nbenchmark = "command"\nname = "a"\nargv = ["echo", "1"]\n'
            f'variant = [1, 2]\n{metric}[[exclude]]\nargv = ["echo", "1"]\nvariant = 2\n')
    [cell] = parse_campaign(tomllib.loads(text), Path("c.toml"), text).cells
    assert cell.param("variant") == 1
