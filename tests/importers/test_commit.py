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
