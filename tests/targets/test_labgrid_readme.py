"""README §2's labgrid QEMUDriver example, run as written: its commands copied from README.md
(`jitterlab labgrid-board lab`, `cd lab && jitterlab run ab.toml ...`, `jitterlab compare ...`), its
campaign the one the README shows. Emulated CPUs on a shared machine: nothing here asserts a
timing; the verdict is printed."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import time
from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.store.catalog import Store

TOOLS = ("qemu-system-aarch64", "mmdebstrap", "debugfs", "aarch64-linux-gnu-gcc")

README = Path(__file__).parents[2] / "README.md"


def readme_example() -> tuple[list[str], str]:
    """The shell commands and the campaign of the QEMUDriver example in README.md."""
    text = README.read_text()
    section = text[text.index("2. **A labgrid env with `QEMUDriver`**"):text.index("3. **A LAVA job.**")]
    [sh] = re.findall(r"```sh\n(.*?)```", section, re.S)
    [toml] = re.findall(r"```toml\n(.*?)```", section, re.S)
    dedent = lambda block: "\n".join(line[3:] for line in block.splitlines()).rstrip() + "\n"  # noqa: E731
    return dedent(sh).strip().splitlines(), dedent(toml)


def test_the_campaign_the_readme_shows_is_the_one_labgrid_board_writes():
    from jitterlab.targets.qemu.labgrid_board import CAMPAIGN

    _, campaign = readme_example()
    written = CAMPAIGN.format(env="env.yaml", campaign="ab.toml", results="results")
    assert written.split("[campaign]")[1] == campaign.split("[campaign]")[1]


@pytest.mark.vm
@pytest.mark.skipif(not all(shutil.which(t) for t in TOOLS), reason="qemu-system-arm, mmdebstrap, "
                    "e2fsprogs and gcc-aarch64-linux-gnu are not installed (scripts/install-deps test)")
def test_the_readme_example_runs_as_written(tmp_path, monkeypatch, capsys):
    pytest.importorskip("labgrid")
    commands, campaign = readme_example()
    monkeypatch.chdir(tmp_path)
    started = time.monotonic()
    for line in commands:
        for part in line.split(" && "):
            words = shlex.split(part)
            if words[0] == "cd":
                os.chdir(words[1])
                continue
            assert words[0] == "jitterlab", line
            rc = main(words[1:])
            # run exits 1 when a run could not be measured (a starved emulated board): said per run below
            assert rc == 0 or (words[1] == "run" and rc == 1), (line, capsys.readouterr())
            if words[1] == "labgrid-board":  # the campaign it wrote is the README's
                assert (Path(words[2]) / "ab.toml").read_text().split("[campaign]")[1] == \
                    campaign.split("[campaign]")[1]
    runs = Store(Path("results"), create=False).runs()
    assert sorted({r.labels["image"] for r in runs}) == ["A", "B"]
    assert all(r.status in ("ok", "unmeasurable") for r in runs), [r.error for r in runs]
    assert {r.labels["image"] for r in runs if r.status == "ok"} == {"A", "B"}, [r.error for r in runs]
    capsys.readouterr()
    assert main(["compare", "--results", "results", "--baseline", "image=A", "--candidate", "image=B",
                 "--metric", "max_rel_period_error", "--format", "json"]) == 0
    [row] = json.loads(capsys.readouterr().out)["rows"]
    with capsys.disabled():
        print(f"\nREADME labgrid example: {time.monotonic() - started:.0f} s; image B vs A: "
              f"{row['verdict']}, ratio {row['ratio']}, p {row['p_adjusted']}")
