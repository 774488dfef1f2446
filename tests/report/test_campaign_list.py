"""`jitterlab show` without a run: one line per campaign (its labels, runs, last run, headline by the
metric's rule and the verdict summary would give), chosen with --campaign, --label and --since;
--runs lists every run instead. On a store with known answers: campaign `old` (one label set, a failed
run), campaign `ab` measured as image=A and image=B, B ten times A's error."""

from __future__ import annotations

import datetime as dt
import shlex
from pathlib import Path

import pytest

from jitterlab.analysis.compare import Selector
from jitterlab.cli.main import main
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report import verdicts
from jitterlab.store.catalog import Store

S = 10**9
OLD_NS = int(dt.datetime(2001, 9, 9, 3, 46, 40).timestamp()) * S
AB_NS = int(dt.datetime(2023, 11, 14, 22, 13, 20).timestamp()) * S
A = [0.010, 0.011, 0.0105, 0.0102, 0.0108]


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("list") / "r"
    store = Store(root)
    old = store.new_campaign("old", "fp", "old.toml", "", {}, created_ns=OLD_NS)
    for rep, status in enumerate(("ok", "ok", "failed")):
        store.commit_run(run_record(
            squarewave_cell("python", 10_000_000), id=f"0d{rep}", campaign_id=old, repetition=rep,
            status=status, started_ns=OLD_NS + rep * S, cell_key="old",
            metrics=[Metric("max_rel_period_error", 0.5 + rep, "ratio", "vpin")] if status == "ok" else []))
    for k, image in enumerate("AB"):
        cid = store.new_campaign("ab", "fp", "ab.toml", "", {"image": image}, created_ns=AB_NS + k * 100 * S)
        for rep, value in enumerate(A):
            store.commit_run(run_record(
                squarewave_cell("c-fifo", 1_000_000), id=f"ab{image.lower()}{rep}", campaign_id=cid,
                repetition=rep, labels={"image": image}, started_ns=AB_NS + (k * 100 + rep) * S,
                cell_key="ab", metrics=[Metric("max_rel_period_error", value * (1 + 9 * k), "ratio",
                                               "vpin")]))
    store.close()
    return root


def show(results: Path, *words: str, capsys, rc: int = 0) -> list[str]:
    assert main(["show", "--results", str(results), *words]) == rc
    captured = capsys.readouterr()
    return (captured.out if rc == 0 else captured.err).splitlines()


def test_one_line_per_campaign_with_its_headline_and_the_verdict_summary_gives(results, capsys):
    out = show(results, capsys=capsys)
    assert out[0] == "2 campaigns"
    assert out[1].split() == ["campaign", "labels", "runs", "last", "run", "headline", "verdict"]
    old, ab = out[2], out[3]  # the latest last
    when = dt.datetime.fromtimestamp(OLD_NS / S + 2).strftime("%Y-%m-%d %H:%M:%S")  # the failed run's
    assert old.split()[:2] == ["old", "—"] and f"3 (1 not ok)  {when}" in old
    assert "squarewave: maximum relative period error 150 % (worst of 2 runs)" in old and old.endswith("—")
    store = Store(results, create=False)
    judged = verdicts.verdicts(store.runs(), Selector("image", "A"), Selector("image", "B"))
    store.close()
    assert judged.counts["worse"] == 1  # the one tested row: 10x the error in 5 runs of each
    assert ab.split()[:4] == ["ab", "image=A,", "image=B", "10"]
    assert "squarewave: maximum relative period error 11 % (worst of 10 runs)" in ab  # B's rep 1
    assert ab.endswith("image=B vs image=A: 1 worse")
    cli = shlex.quote(str(results))
    assert out[4:] == [f"every run: jitterlab show --results {cli} --runs --campaign ab",
                       f"its worst run by its headline, in detail: jitterlab show --results {cli} abb1"]
    for line in out[4:]:  # as printed
        assert main(shlex.split(line.split(": ", 1)[1])[1:]) == 0
    capsys.readouterr()


def test_campaign_label_and_since_choose_the_lines(results, capsys):
    out = show(results, "--label", "image=B", capsys=capsys)
    assert out[0] == "1 campaign" and out[2].split()[:3] == ["ab", "image=B", "5"] and out[2].endswith("—")
    out = show(results, "--since", "2020-01-01", capsys=capsys)
    assert out[0] == "1 campaign" and out[2].startswith("ab ")
    out = show(results, "--campaign", "old", "--campaign", "ab", capsys=capsys)
    assert out[0] == "2 campaigns"
    [err] = show(results, "--campaign", "ab", "--label", "imag=B", capsys=capsys, rc=2)
    assert err.startswith("error: --label imag=B: no run of ab in ") and "did you mean 'image=B'? " in err
    assert err.endswith(f"labels there: image=A, image=B; runs from "
                        f"{dt.datetime.fromtimestamp(AB_NS / S):%Y-%m-%d %H:%M} to "
                        f"{dt.datetime.fromtimestamp(AB_NS / S + 104):%Y-%m-%d %H:%M}")
    [err] = show(results, "--since", "tomorrow", capsys=capsys, rc=2)
    assert err.startswith("error: jitterlab show: argument --since: give a date (")


def test_runs_lists_every_run_chosen(results, capsys):
    out = show(results, "--runs", "--campaign", "ab", "--label", "image=A", capsys=capsys)
    assert out[0] == "5 runs" and [line.split()[0] for line in out[2:7]] == [f"aba{i}" for i in range(5)]
    out = show(results, "--runs", capsys=capsys)
    assert out[0] == "13 runs"
    assert (f"the cells' tables of one campaign: jitterlab show --results {results} --runs --campaign "
            "ab") in out
    [err] = show(results, "abb1", "--runs", capsys=capsys, rc=2)
    assert err == "error: RUN_ID abb1 shows one run: leave out --runs (they choose the runs the list shows)"


def test_verdicts_are_judged_for_the_latest_campaigns_only(results, capsys, monkeypatch):
    from jitterlab.report import campaign_list

    monkeypatch.setattr(campaign_list, "MAX_JUDGED", 1)
    out = show(results, "--campaign", "ab", "--campaign", "old", capsys=capsys)
    assert out[2].endswith("(not judged here: see below)") and out[3].endswith("image=B vs image=A: 1 worse")
