"""Campaign files that once crashed, hung or were silently accepted: each is now one error at read
time naming file and key, and nothing grows with a number before it is bounded."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from jitterlab.campaign.file import MAX_REPETITIONS, load_campaign
from jitterlab.cli.main import main
from jitterlab.model.errors import UserError

BASE = """
[campaign]
name = "t"
repetitions = 2
duration = "1s"
warmup = "50ms"
[[target]]
name = "local"
kind = "local"
[matrix]
impl = ["c-fifo", "python"]
period = ["10ms", "1ms"]
load = ["idle", "cpu"]
probe = "self"
"""


def write(tmp_path: Path, text: str, name: str = "c.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> str:
    path = write(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_campaign(path)
    message = str(info.value)
    assert message.startswith(str(path)) and "\n" not in message
    return message


@pytest.mark.parametrize(("old", "new", "expected"), [
    # tracebacks before
    ('duration = "1s"', f'duration = "{"9" * 400}s"', "campaign.duration: duration '999"),
    ('kind = "local"', 'kind = ["local"]', "target[0].kind: expected a target kind name (a string)"),
    ('name = "local"', 'name = {a = 1}', "target[0].name: a target name is one word"),
    # hangs before
    ("repetitions = 2", "repetitions = 1000000000", f"from 1 to {MAX_REPETITIONS}, got 1000000000"),
    ("[[target]]", '[campaign.cpus]\nprogram = "0-99999999999"\n[[target]]',
     "campaign.cpus.program: cannot read CPU list"),
    ("[[target]]", '[campaign.cpus]\nload = "0-5000"\n[[target]]', "CPU 5000 is out of range"),
    ("[[target]]", '[campaign.cpus]\nload = [0, 99999999999]\n[[target]]', "CPU 99999999999 is out of"),
    # silently accepted before
    ('duration = "1s"', 'duration = "300000h"', "campaign.duration: duration '300000h' is too long"),
    ('warmup = "50ms"', 'warmup = "2s"', "campaign.warmup: 2s is not shorter than campaign.duration"),
    ('period = ["10ms", "1ms"]', 'period = ["10ms", "1s"]',
     "matrix.period: 1s is too long for campaign.duration (1s)"),
    ('name = "t"', 'name = "t"\ndescription = {a = 1}', "campaign.description: expected text"),
    ('name = "t"', 'name = "t\\u001b]0;x\\u0007"', "campaign.name: expected one line of printable text"),
    ("[[target]]", '[campaign.labels]\n"a=b" = "1"\n[[target]]', "a label key is a word without '='"),
    ("[[target]]", '[campaign.labels]\nimage = "1\\n2"\n[[target]]', "campaign.labels.image: expected one"),
    # compare strips KEY=VALUE: a label with spaces around its key or value could never be selected
    ("[[target]]", '[campaign.labels]\n" image" = "1"\n[[target]]',
     "campaign.labels. image: a label key is a word without '='"),
    ("[[target]]", '[campaign.labels]\nimage = "1 "\n[[target]]',
     "campaign.labels.image: a label value has no spaces around it"),
    ('load = ["idle", "cpu"]', 'load = ["idle", "cpu+cpu"]', "matrix.load: 'cpu+cpu' names a load twice"),
])
def test_bad_values_are_refused_when_the_file_is_read(tmp_path, old, new, expected):
    assert old in BASE
    assert expected in refused(tmp_path, BASE.replace(old, new, 1))


@pytest.mark.parametrize(("rule", "expected"), [
    ('load = "cpuu"', "exclude[0].load: unknown load 'cpuu'; did you mean 'cpu'?"),
    ('target = "locla"', "exclude[0].target: no target 'locla'; did you mean 'local'?"),
    ('impl = "bash"', "exclude[0]: matches no cell of the matrix, so it excludes nothing; check its keys "
                      "and values against the matrix (impl takes c-fifo, python)"),
    ('period = "5ms"\nimpl = "python"', "(period takes 10ms, 1ms; impl takes c-fifo, python)"),
    ("load = []", "exclude[0].load: the list is empty"),
    ("load = 3", "exclude[0].load: expected names (strings), got 3"),
])
def test_an_exclude_rule_that_excludes_nothing_is_refused(tmp_path, rule, expected):
    assert expected in refused(tmp_path, BASE + f"[[exclude]]\n{rule}\n")


def test_an_exclude_rule_that_matches_is_kept(tmp_path):
    campaign = load_campaign(write(tmp_path, BASE + '[[exclude]]\nload = "cpu"\nimpl = "python"\n'))
    assert len(campaign.cells) == 6


def test_a_file_that_is_not_utf8_is_one_error(tmp_path):
    path = tmp_path / "c.toml"
    path.write_bytes(BASE.replace('"t"', '"t\xe9"').encode("latin-1"))
    with pytest.raises(UserError, match=r"c.toml: not UTF-8 text \(byte 0xe9 at offset \d+\); .* save it as"):
        load_campaign(path)
    # and the same through run and doctor --campaign: exit 2, not a traceback
    assert main(["run", str(path), "--dry-run"]) == 2
    assert main(["doctor", "--campaign", str(path), "local"]) == 2


def test_a_huge_matrix_is_refused_before_it_is_expanded(tmp_path):
    # 100 targets x 4 loads x 2 impls x 500 periods = 400000 cells
    periods = ", ".join(f'"{n}us"' for n in range(100, 600))
    text = BASE.replace('period = ["10ms", "1ms"]', f"period = [{periods}]")
    text = text.replace('load = ["idle", "cpu"]', 'load = ["idle", "cpu", "memory", "cpu+memory"]')
    text = text.replace('[[target]]\nname = "local"\nkind = "local"\n', "".join(
        f'[[target]]\nname = "t{i}"\nkind = "local"\n' for i in range(100)))
    tracemalloc.start()
    try:
        message = refused(tmp_path, text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "matrix.benchmark: the matrix gives over 100000 cells (400000 of 'squarewave'" in message
    assert peak < 50 << 20  # cells are counted, not made


def test_dry_run_counts_runs_and_lists_a_bounded_number_of_cells(tmp_path, capsys):
    periods = ", ".join(f'"{n}ms"' for n in range(1, 301))  # 300 x 2 impls x 2 loads = 1200 cells
    text = BASE.replace('period = ["10ms", "1ms"]', f"period = [{periods}]").replace(
        'duration = "1s"', 'duration = "2s"').replace("repetitions = 2", "repetitions = 800")
    assert main(["run", str(write(tmp_path, text)), "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert "1,200 cells x 800 repetitions" in out
    assert "... and 1,000 more cells" in out
    assert "960,000 runs, estimated" in out
