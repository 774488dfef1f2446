"""The one reader of rt-tests' --json output (cyclictest and the IPC tests), on real outputs and
broken ones."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jitterlab.analysis.rttests import average_us, read_json
from jitterlab.model.errors import RunFailed

DATA = Path(__file__).parent.parent / "data"


@pytest.mark.parametrize(("name", "tool", "n"), [
    ("cyclictest/two-threads.json", "cyclictest", 2),
    ("cyclictest/never-woke.json", "cyclictest", None),
    ("rt-tests-ipc/ptsematest-2-pairs-cpu1.json", "ptsematest", 2),
    ("rt-tests-ipc/sigwaittest-2-pairs-cpu1.json", "sigwaittest", 2),
    ("rt-tests-ipc/pmqtest-2-pairs-cpu1.json", "pmqtest", 2),
    ("rt-tests-ipc/ptsematest-1-pair-unpinned.json", "ptsematest", 1),
])
def test_real_outputs_in_thread_order(name, tool, n):
    out = read_json((DATA / name).read_bytes(), tool)
    assert out.document["return_code"] == 0 and len(out.entries) == out.document["num_threads"]
    assert n is None or len(out.entries) == n
    assert all(isinstance(e, dict) for e in out.entries)


def test_nan_reads_as_none():
    raw = b'{"num_threads": 1, "thread": {"0": {"avg": -nan, "min": 0}}}'
    [entry] = read_json(raw, "cyclictest").entries
    assert entry["avg"] is None and average_us(entry["avg"]) is None
    assert average_us(12) == 12.0
    with pytest.raises(ValueError):
        average_us("x")


def _doc(**top) -> bytes:
    return json.dumps({"return_code": 0, "num_threads": 2, "thread": {"0": {}, "1": {}}, **top}).encode()


@pytest.mark.parametrize(("raw", "what", "reason"), [
    (b"", "thread", "pmqtest --json output is not JSON"),
    (b"[1, 2]", "thread", 'pmqtest --json output has no "thread" results'),
    (_doc(thread={}), "thread", 'pmqtest --json output has no "thread" results'),
    (_doc(return_code=3), "thread", "pmqtest reported return code 3 in its --json output"),
    (_doc(thread={"0": {}, "2": {}}), "pair",
     "pmqtest --json output: pairs ['0', '2'] are not numbered 0..1"),
    (_doc(num_threads=3), "thread", "pmqtest --json output: threads ['0', '1'] do not match num_threads 3"),
])
def test_broken_outputs_fail_naming_the_tool(raw, what, reason):
    with pytest.raises(RunFailed) as info:
        read_json(raw, "pmqtest", what)
    assert info.value.reason.startswith(reason)
