"""An import enters the store by the store's one commit path, as a measured run does: the importer
describes the run (record, series, warnings), the store writes the file and the rows."""

from __future__ import annotations

import numpy as np
import pytest

from jitterlab.analysis.synthetic import square_wave
from jitterlab.importers import Capture, store_capture
from jitterlab.importers.record import NO_CAMPAIGN, PROBE, capture_run
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store

T, LEVEL = square_wave(1_000_000, 100, jitter_ns=1_000, seed=4)


def test_a_capture_is_described_as_a_run_without_a_store():
    capture = Capture(T, LEVEL, __file__, blind_ticks=np.array([[T[10] + 1, T[11] - 1]]), warnings=("gap",))
    imported = capture_run(capture, period_ns=1_000_000, warmup_ns=0, labels={"impl": "scope", "board": "b"})
    run = imported.record
    assert (run.campaign_id, run.repetition, run.raw_path, run.raw_sha256) == (NO_CAMPAIGN, 0, None, None)
    assert run.param("impl") == "scope" and run.cell_key.endswith(" import=board=b")
    assert set(imported.series) == {PROBE, f"{PROBE}.blind"}
    assert np.array_equal(imported.series[PROBE].t_ns, T)
    assert [w.message for w in imported.warnings] == ["gap"]
    assert run.metrics[(PROBE, "excluded_periods")].value > 0  # the blind span excludes its periods


def test_an_unmeasurable_capture_is_refused_before_the_store_is_touched(tmp_path):
    store = Store(tmp_path)
    with pytest.raises(UserError, match=r"check --period and the file"):
        store_capture(store, Capture(T[:3], LEVEL[:3], __file__), period_ns=1_000_000, warmup_ns=0, labels={})
    assert store.campaigns() == [] and list((tmp_path / "raw").iterdir()) == []


class SpyStore:
    """Only what an import may ask of a store: its campaign, then the one commit."""

    def __init__(self) -> None:
        self.commits: list[tuple] = []

    def campaign_named(self, name, fingerprint, source_path, source, labels):
        return 7

    def commit_run(self, run, warnings=(), **options):
        self.commits.append((run, list(warnings), options))
        return run


def test_the_importer_writes_no_file_and_no_row_itself():
    store = SpyStore()
    store_capture(store, Capture(T, LEVEL, __file__), period_ns=1_000_000, warmup_ns=0, labels={})  # type: ignore[arg-type]
    [(run, _, options)] = store.commits
    assert run.campaign_id == 7 and run.raw_path is None
    assert set(options) == {"series", "next_repetition"} and options["next_repetition"] is True
    assert np.array_equal(options["series"][PROBE].t_ns, T)


def test_a_failed_import_leaves_no_raw_file(tmp_path, monkeypatch):
    store = Store(tmp_path)

    def refuse(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store, "_insert_run", refuse)
    with pytest.raises(OSError, match="disk full"):
        store_capture(store, Capture(T, LEVEL, __file__), period_ns=1_000_000, warmup_ns=0, labels={})
    assert list((tmp_path / "raw").iterdir()) == []


@pytest.mark.parametrize(("period_ns", "warned"), [
    (2_000_000, ("the edges' median period is 1 ms, not the 2 ms given with --period",
                 "import again with --period 1ms")),
    (600_000, ("the edges' median period is 1 ms, not the 600 µs given with --period",
               "import again with --period 1ms")),
    (1_400_000, None), (700_000, None), (1_000_000, None)])
def test_a_period_far_from_the_edges_median_is_stored_with_a_warning(period_ns, warned):
    # --period 2ms on a 1 ms capture gave 50 % and drift -500,000 ppm without a word
    imported = capture_run(Capture(T, LEVEL, __file__), period_ns=period_ns, warmup_ns=0, labels={})
    found = [(w.message, w.remedy) for w in imported.warnings]
    assert found == ([warned] if warned else [])
    assert imported.record.metrics[(PROBE, "n_periods")].value > 0  # the run is stored all the same


def test_the_import_says_the_warnings_it_stored_with_their_remedies(tmp_path, capsys):
    from jitterlab.cli.main import main

    path = tmp_path / "cap.csv"
    path.write_text("time_ns,level\n" + "".join(f"{t},{v}\n" for t, v in zip(T, LEVEL, strict=True)))
    assert main(["import", "edges", str(path), "--period", "2ms", "--results", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == ("warning: the edges' median period is 1 ms, not the 2 ms given with --period; import "
                      "again with --period 1ms")
    store = Store(tmp_path / "r")
    try:
        [run] = store.runs()
        [(run_id, stored)] = store.warnings(run.campaign_id)
    finally:
        store.close()
    assert run_id == run.id and stored.remedy == "import again with --period 1ms"
