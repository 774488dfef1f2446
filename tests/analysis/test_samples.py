"""Within-run distributions for figures and the pooled comparison, from stored raw series."""

from __future__ import annotations

import numpy as np

from jitterlab.analysis.latency import histogram_metrics
from jitterlab.analysis.samples import overflow_count, run_distribution
from jitterlab.model.fakes import cell, run_record
from jitterlab.model.series import Samples
from jitterlab.store.raw import write_raw


def test_histogram_with_overflow_reaches_the_recorded_maximum(tmp_path):
    counts = np.zeros(100, dtype=np.int64)
    counts[[5, 20]] = [90, 7]
    raw = "raw/r.parquet"
    sha = write_raw(tmp_path / raw, {"thread0.histogram_1us": Samples(counts, "count per 1us bucket")})
    # cyclictest stores the overflow per thread and overall: counted once, not twice
    metrics = [*histogram_metrics(counts, overflow=3, max_ns=2_500_000, probe="thread0"),
               *histogram_metrics(counts, overflow=3, max_ns=2_500_000)]
    run = run_record(cell("cyclictest", {"interval": 1_000_000}), raw_path=raw, raw_sha256=sha,
                     metrics=metrics)
    assert overflow_count(run) == 3
    values, weights = run_distribution(tmp_path, run)["latency"]
    assert list(values) == [5_000, 20_000, 2_500_000] and list(weights) == [90, 7, 3]


def test_raw_samples_as_values_and_counts(tmp_path):
    raw = "raw/u.parquet"
    sha = write_raw(tmp_path / raw, {"rtt": Samples(np.array([300, 100, 300, 200]), "ns")})
    run = run_record(cell("udp-echo", {"size": 64}), raw_path=raw, raw_sha256=sha)
    values, weights = run_distribution(tmp_path, run)["latency"]
    assert list(values) == [100, 200, 300] and list(weights) == [1, 1, 2]
