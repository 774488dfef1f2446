import numpy as np
import pytest

from jitterlab.analysis.latency import histogram, histogram_metrics, latency_metrics
from jitterlab.model.errors import RunFailed


def by_name(metrics):
    return {m.name: m for m in metrics}


def test_samples_known_answers():
    # 1..10000 us: p50 = 5000 us, p99 = 9900 us, p999 = 9990 us, p9999 = 9999 us exactly
    samples = np.arange(1, 10001) * 1000
    m = by_name(latency_metrics(samples))
    assert m["latency_min_ns"].value == 1000
    assert m["latency_max_ns"].value == 10_000_000
    assert m["latency_mean_ns"].value == 5_000_500
    assert m["latency_p50_ns"].value == 5_000_000
    assert m["latency_p99_ns"].value == 9_900_000
    assert m["latency_p999_ns"].value == 9_990_000
    assert m["latency_p9999_ns"].value == 9_999_000
    assert m["latency_std_ns"].value == pytest.approx(np.std(samples))
    assert m["latency_samples"].value == 10000
    assert m["latency_samples"].direction == "none"
    assert all(x.direction == "lower" and x.unit == "ns" for k, x in m.items() if k.endswith("_ns"))


def test_histogram_agrees_with_samples_in_whole_microseconds():
    rng = np.random.default_rng(1)
    samples = rng.integers(3, 80, 5000) * 1000
    counts, overflow = histogram(samples, 100)
    assert overflow == 0 and counts.sum() == 5000
    from_samples = by_name(latency_metrics(samples))
    from_hist = by_name(histogram_metrics(counts))
    for name in ("min", "max", "p50", "p99", "p999", "p9999", "mean", "std"):
        key = f"latency_{name}_ns"
        assert from_hist[key].value == pytest.approx(from_samples[key].value), key


def test_histogram_overflow_quantile_is_the_reported_max():
    counts = np.zeros(10, dtype=np.int64)
    counts[2] = 98
    m = by_name(histogram_metrics(counts, overflow=2, max_ns=25_000, min_ns=2_100, mean_ns=2_500))
    assert m["latency_p50_ns"].value == 2000
    assert m["latency_p99_ns"].value == 25_000  # 99th of 100 samples lies in the overflow
    assert m["latency_max_ns"].value == 25_000
    assert m["latency_min_ns"].value == 2_100 and m["latency_mean_ns"].value == 2_500
    assert m["latency_overflow"].value == 2
    assert m["latency_samples"].value == 100


def test_empty_is_unmeasurable():
    with pytest.raises(RunFailed) as info:
        latency_metrics(np.array([], dtype=np.int64))
    assert info.value.status == "unmeasurable"
    with pytest.raises(RunFailed):
        histogram_metrics(np.zeros(5, dtype=np.int64))


def test_prefix_and_probe():
    m = latency_metrics(np.array([5, 6, 7]), prefix="rtt", subject="client")
    assert {x.name for x in m} >= {"rtt_p99_ns", "rtt_samples"}
    assert {x.subject for x in m} == {"client"}
