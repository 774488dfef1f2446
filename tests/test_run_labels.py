"""`run --label KEY=VALUE`: the same campaign measured on two images, told apart by label."""

from __future__ import annotations

import pytest

from jitterlab.cli.main import main
from jitterlab.store.catalog import Store


def campaign(tmp_path):
    path = tmp_path / "c.toml"
    path.write_text(f"""
[campaign]
name = "img"
repetitions = 1
[campaign.labels]
image = "A"
board = "bbb"
[[target]]
name = "local"
kind = "local"
workdir = "{tmp_path / 'target'}"
[matrix]
benchmark = "boot"
""")
    return path


def test_label_option_overrides_and_adds(tmp_path, capsys):
    path, results = campaign(tmp_path), str(tmp_path / "results")
    assert main(["run", str(path), "--results", results]) in (0, 1)
    assert main(["run", str(path), "--results", results, "--label", "image=B", "--label", "lab=2"]) in (0, 1)
    store = Store(tmp_path / "results", create=False)
    labels = [r.labels for r in store.runs()]
    assert labels == [{"image": "A", "board": "bbb"}, {"image": "B", "board": "bbb", "lab": "2"}]
    # a resume with another label is another measurement: refused, with the reason
    # a report on the campaign covers the latest run of each label set, and compares them
    assert main(["run", str(path), "--results", results]) in (0, 1)  # image=A again: replaces the first
    assert main(["report", "--results", results, "--campaign", "img", "-o", str(tmp_path / "r.html"),
                 "--no-figure-files"]) == 0
    html = (tmp_path / "r.html").read_text()
    assert "img [board=bbb, image=B, lab=2] (#2)" in html and "img [board=bbb, image=A] (#3)" in html
    assert "(#1)" not in html and "Not shown: 1 run of earlier measurements of the same labels" in html
    assert main(["run", str(path), "--results", results, "--resume", "--label", "image=C"]) == 2
    assert "labels" in capsys.readouterr().err
    store.close()


@pytest.mark.parametrize("bad", ["image", "=B", "image="])
def test_bad_label(tmp_path, bad, capsys):
    assert main(["run", str(campaign(tmp_path)), "--dry-run", "--label", bad]) == 2
    assert "--label" in capsys.readouterr().err
