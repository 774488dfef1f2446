"""A cell's causes as shares of its lateness, the remedy of each, and the limits block agreeing with
them: read from a store of traced runs whose explanations have exact answers (tests/support.py
explained_store: 70 % a task, 20 % an IRQ, 10 % not covered)."""

from __future__ import annotations

import json

import pytest

from jitterlab.model.explanation import Part, Who
from jitterlab.report import causes, limits
from jitterlab.store.catalog import Store
from tests.support import US, explained_period, explained_store


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    return explained_store(tmp_path_factory.mktemp("causes"))


def test_shares_of_one_period_read_exactly():
    s = causes.shares([explained_period(0, 10**9, 700 * US, 200 * US, 100 * US)])
    assert [(g.cause, g.who, g.ns) for g in s.groups] == [
        ("wakeup", "stress-ng-cpu [SCHED_OTHER]", 700 * US), ("irq", "IRQ 11 virtio0", 200 * US),
        ("uncovered", None, 100 * US)]
    assert [g.share for g in s.groups] == [0.7, 0.2, 0.1]
    assert s.line() == ("70 % preempted by stress-ng-cpu [SCHED_OTHER], 20 % IRQ 11 virtio0, "
                        "10 % not covered by the trace")
    assert s.lateness_ns == 1000 * US and s.causes() == {"wakeup", "irq"}


def test_a_cell_groups_its_runs_tasks_by_command_not_pid(results):
    store = Store(results, create=False)
    cells = causes.cell_shares(store.runs(), causes.Explanations(store.root))
    assert list(cells) == [("board", "c-mmap 1ms cpu (vpin)")]
    s = cells[("board", "c-mmap 1ms cpu (vpin)")]
    assert (s.runs, s.periods, s.lateness_ns) == (2, 3, 2500 * US)
    assert [(g.text, g.ns) for g in s.groups] == [
        ("preempted by stress-ng-cpu [SCHED_OTHER]", 1750 * US), ("IRQ 11 virtio0", 500 * US),
        ("not covered by the trace", 250 * US)]
    store.close()


def test_more_than_three_groups_keep_the_top_three_and_other():
    def part(cause, ns, irq):
        return Part(cause=cause, duration_ns=ns, who=Who(kind="irq", irq=irq, irq_name=f"dev{irq}"))

    p = explained_period(0, 0, 400 * US, 300 * US, 0)
    p = type(p)(index=0, due_ns=0, edge_ns=1000 * US, chosen="worst", remainder_ns=0, parts=(
        *p.parts, part("irq", 200 * US, 12), part("irq", 60 * US, 13), part("softirq", 40 * US, 0)))
    s = causes.shares([p])
    assert [g.text for g in s.groups] == ["preempted by stress-ng-cpu [SCHED_OTHER]", "IRQ 11 virtio0",
                                          "IRQ 12 dev12", "other (2 more)"]
    assert s.groups[-1].ns == 100 * US and s.groups[-1].cause == "other"
    assert s.line().startswith("40 % preempted")


OTHER_TASK = Who(kind="task", comm="stress-ng-cpu", policy="SCHED_OTHER", priority=0)


@pytest.mark.parametrize(("cause", "who", "tuning", "words"), [
    ("wakeup", OTHER_TASK, "isolated", "a real-time policy for the program (SCHED_FIFO"),
    ("wakeup", Who(kind="task", comm="irq/11", policy="SCHED_FIFO/RR", priority=50), "isolated",
     "a SCHED_FIFO priority above 50 for the program"),
    ("irq", Who(kind="irq", irq=11, irq_name="virtio0"), "irq-away", "IRQ 11's affinity away"),
    ("irq", Who(kind="irq", irq=-1), "isolated", "other timers' callbacks"),
    ("softirq", Who(kind="softirq", softirq="NET_RX"), "irq-away", "PREEMPT_RT"),
    ("idle-exit", None, "cpu-dma-latency", "/dev/cpu_dma_latency"),
    ("unaccounted", None, None, "nothing in Linux: hardware or hypervisor"),
    ("timer", OTHER_TASK, "isolated", "held off while stress-ng-cpu [SCHED_OTHER] ran"),
    ("slack", None, "timer-slack", "timer slack"),
])
def test_each_cause_has_the_remedy_that_fits_it(cause, who, tuning, words):
    from jitterlab import plugins

    r = causes.remedy(cause, who)
    assert r is not None and words in r.text and r.tuning == tuning
    if tuning:
        assert tuning in plugins.TUNINGS.names()
    assert causes.remedy("uncovered") is None


def test_the_limits_block_proposes_no_remedy_for_a_cause_the_trace_does_not_show(results):
    store = Store(results, create=False)
    runs = store.runs()
    shown = causes.traced_causes(runs, causes.Explanations(store.root))
    assert shown == {"board": frozenset({"wakeup", "irq"})}
    untraced = [x.what for x in limits.limits(runs, store.sysinfo)]
    assert any(w.startswith("a VM (kvm)") for w in untraced)  # a VM's stalls: unaccounted time
    traced = limits.limits(runs, store.sysinfo, traced=shown)
    whats = [x.what for x in traced]
    assert not any(w.startswith("a VM (kvm)") for w in whats)  # the trace shows none unaccounted
    assert any(w.startswith("no isolated CPU") for w in whats)  # it shows a task preempting
    assert [x.what.split(":")[0] for x in limits.withheld(runs, store.sysinfo, shown)] == ["a VM (kvm)"]
    assert causes.uncovered_share(runs, causes.Explanations(store.root)) == {"board": 0.1}
    store.close()


def test_a_damaged_explanation_is_said_naming_its_file(results, tmp_path):
    store = Store(results, create=False)
    run = store.runs(run_id="bbb222")[0]
    path = store.root / run.attachments["explained.json"]
    kept = path.read_bytes()
    try:
        path.write_text(json.dumps({"periods": "nope"}))
        with pytest.raises(causes.DamagedExplanation, match=r"explained.json: run bbb222's explanation is "
                                                            r"damaged \(periods"):
            causes.read_explanation(run, store.root)
        found = causes.Explanations(store.root)
        assert found.of(run) is None and "bbb222" in found.damaged
    finally:
        path.write_bytes(kept)
        store.close()


def test_a_cell_stored_without_a_key_added_later_keeps_its_benchmarks_label():
    from dataclasses import replace

    from jitterlab.campaign import cells
    from jitterlab.model.fakes import squarewave_cell

    untraced = squarewave_cell("c-mmap", 1_000_000, load="cpu")  # no trace key: at its default
    assert cells.label(untraced) == "c-mmap 1ms cpu (vpin)"
    traced = replace(untraced, params=(*untraced.params, ("trace", "sched")))
    assert cells.label(traced) == cells.label(untraced)


def test_a_cause_s_tuning_the_machine_refused_is_said_instead_of_its_command(results):
    """Under the traced cell's remedies: the command of each tuning they name, except one whose
    check refused on the target (report/limits.Measure), which says why and gives no command."""
    from jitterlab.report.causes_view import cell_lines

    store = Store(results, create=False)
    cells = causes.cell_shares(store.runs(), causes.Explanations(store.root))
    store.close()
    template = limits.measure_tuning("c.toml", "results", {})
    why = "tuning isolated cannot be applied on board: Linux 6.1 has no isolated cpuset partitions"
    lines = cell_lines(cells, measure=limits.Measure(template, {"isolated": why}))
    assert f"      not measured by a tuning here: {why}" in lines
    assert "      " + limits.measured_line("irq-away", template) in lines
    assert not any("--tuning none,isolated" in line for line in lines)
