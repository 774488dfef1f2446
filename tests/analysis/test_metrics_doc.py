"""Every worked example of docs/metrics.md, computed by the code: the doc cannot drift."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from jitterlab.analysis.latency import histogram_metrics, latency_metrics
from jitterlab.analysis.squarewave import squarewave_metrics
from jitterlab.analysis.stats import mann_whitney_p

DOC = Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
_BLOCK = re.compile(r"```example (\S+)\n(.*?)```", re.S)


def examples() -> list[tuple[str, dict[str, str], dict[str, float | None]]]:
    """(kind, fields, expect): expect maps a metric to its value, or to None for an `absent:`
    line (a metric the code must not store, e.g. an unbounded percentile's upper bound)."""
    out = []
    for kind, body in _BLOCK.findall(DOC.read_text()):
        fields: dict[str, str] = {}
        expect: dict[str, float | None] = {}
        for line in body.strip().splitlines():
            key, _, value = line.partition(":")
            if key == "expect":
                name, _, number = value.partition("=")
                expect[name.strip()] = float(number)
            elif key == "absent":
                expect[value.strip()] = None
            else:
                fields[key.strip()] = value.strip()
        out.append((kind, fields, expect))
    return out


def numbers(text: str) -> np.ndarray:
    return np.array([float(x) for x in text.split()])


def compute(kind: str, fields: dict[str, str]) -> dict[str, float]:
    if kind == "squarewave":
        t = numbers(fields["edges_ns"]).astype(np.int64)
        spans = [tuple(int(x) for x in s.split("-")) for s in fields.get("blind_ns", "").split()]
        blind = np.array(spans, dtype=np.int64).reshape(-1, 2)
        level = ((np.arange(len(t)) + 1) % 2).astype(np.uint8)
        got = squarewave_metrics(t, level, int(fields["period_ns"]),
                                 warmup_ns=int(fields["warmup_ns"]), blind=blind)
    elif kind == "latency":
        got = latency_metrics(numbers(fields["samples_ns"]))
    elif kind == "histogram":
        got = histogram_metrics(numbers(fields["counts"]).astype(np.int64),
                                overflow=int(fields["overflow"]), max_ns=float(fields["max_ns"]))
    elif kind == "mann-whitney":
        return {"p": mann_whitney_p(numbers(fields["a"]), numbers(fields["b"]))}
    else:
        raise AssertionError(f"unknown example kind {kind!r} in {DOC}")
    return {m.name: m.value for m in got}


def test_the_doc_has_its_examples():
    kinds = [kind for kind, _, _ in examples()]
    assert kinds.count("squarewave") == 4 and {"latency", "histogram", "mann-whitney"} <= set(kinds)
    assert all(expect for _, _, expect in examples())


@pytest.mark.parametrize(("kind", "fields", "expect"), examples(),
                         ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(examples())])
def test_worked_example(kind, fields, expect):
    got = compute(kind, fields)
    for name, value in expect.items():
        if value is None:
            assert name not in got, name
            continue
        assert got[name] == pytest.approx(value, rel=1e-12, abs=1e-12), name
