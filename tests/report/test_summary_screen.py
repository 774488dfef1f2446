"""The summary screen (`jitterlab summary`, the end of `run`) of a fixed store with known answers:
the envelope per impl with its evidence, the reading of a table of "none", the comparison's
decided verdicts before the undecided ones, and the machine's own limits with fix and likely
change."""

from __future__ import annotations

import io

import pytest

from jitterlab.analysis.compare import Comparison, Row, Selector
from jitterlab.cli.main import main
from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report import verdicts
from jitterlab.report.summary_screen import Screen, screen
from jitterlab.report.terminal import console
from jitterlab.store.catalog import Store

MS = 1_000_000
VM = {"hostname": "vm", "virtualization": "kvm", "rt_runtime_us": 950_000, "rt_period_us": 1_000_000,
      "isolcpus": [], "n_cpus": 2, "rt_permission": True, "cpus": [{"cpu": 0, "governor": "performance"}]}
# impl -> period -> (max, p99) of |relative period error|, the same in each of 3 repetitions
ERRORS = {"c-fifo": {10 * MS: (0.005, 0.002), MS: (0.05, 0.008)},
          "python": {10 * MS: (0.5, 0.05), MS: (2.0, 0.5)}}


def build(root, sysinfo=VM, labels=({"machine": "a"},)) -> Store:
    store = Store(root)
    for k, label in enumerate(labels):
        cid = store.new_campaign("bench", f"fp{k}", "bench.toml", "", label)
        sid = store.add_sysinfo(cid, "board", SystemFacts.from_json(sysinfo))
        n = 0
        for impl, periods in ERRORS.items():
            for period_ns, (worst, p99) in periods.items():
                for rep in range(3):
                    n += 1
                    failed = impl == "python" and period_ns == MS and rep == 2
                    blind_ns = 10 * MS if impl == "c-fifo" and period_ns == 10 * MS and rep == 0 else 0
                    metrics = [] if failed else [
                        Metric("max_rel_period_error", worst * (1 + k), "ratio", "vpin"),
                        Metric("p99_rel_period_error", p99 * (1 + k), "ratio", "vpin"),
                        Metric("blind_time_ns", float(blind_ns), "ns", "vpin")]
                    store.commit_run(run_record(
                        squarewave_cell(impl, period_ns), id=f"{k}{n:03d}", campaign_id=cid, repetition=rep,
                        cell_key=f"board/{impl}/{period_ns}", labels=label, sysinfo_id=sid,
                        status="failed" if failed else "ok", error="fork failed" if failed else None,
                        settings={"duration_ns": 1_000_000_000, "envelope": ["max", "p99"]},
                        started_ns=n, metrics=metrics))
    return store


def text(renderables) -> list[str]:
    out = console(file=io.StringIO())  # not a terminal: plain rows, as a log gets them
    for r in renderables:
        out.print(r)
    return out.file.getvalue().splitlines()


SCREEN_ON_A_VM = """\
bench: what holds here
board: a VM (kvm): timing of this VM, which its hypervisor may stop at any time
  probe vpin: independent of the program, blind 0.0909 % of the measured time (up to 1 % in a run)
  3 runs per cell
shortest period held in every run, and at every longer period measured
impl    load  max < 1 %  max < 10 %  p99 < 1 %  p99 < 10 %    blind
c-fifo  idle      10 ms        1 ms       1 ms        1 ms  0.167 %
python  idle       none        none       none       10 ms      0 %
max is the strictest rule: one stall in one run sinks a cell; the p99 columns show what held for nearly \
every period
1 run failed: its cell holds nothing; why: jitterlab show --runs --results r
what limits these results on this machine, each with its fix and what it would likely change:
- a VM (kvm): the hypervisor stops it at times, and each stall is one long period (the worst period \
here was 200 % off)
    fix: measure on bare metal for the hardware's figures; compare VM results only with VM ones
    likely: the max columns come close to the p99 ones: one stall per run no longer sinks a cell
- RT throttling (kernel.sched_rt_runtime_us=950000): a busy real-time task is stopped for 5 % of every 1 s
    fix: sysctl -w kernel.sched_rt_runtime_us=-1 (as root; until reboot)
    likely: the polling probe (SCHED_FIFO) keeps its CPU through the throttled time: the periods it was \
blind to then (its blind share, above) are measured, not excluded
- no isolated CPU: the program and the probe share their CPUs with every other task and interrupt
    fix: boot with isolcpus=<cpus> nohz_full=<cpus> rcu_nocbs=<cpus> and give them to the program and \
the probe ([campaign.cpus])
    likely: fewer and shorter stalls: the max rule holds at shorter periods, most of all under load
every run (1 not ok) and its warnings: jitterlab show --runs --results r; figures: jitterlab report \
--results r -o report.html"""


def test_the_screen_of_a_campaign_on_a_vm(tmp_path):
    store = build(tmp_path / "r")
    lines = text(screen(store.runs(), "bench", Screen("r", store.sysinfo)))
    assert lines == SCREEN_ON_A_VM.splitlines()
    # each figure said once: the worst period with the VM that explains it, the blind share first
    screen_text = "\n".join(lines)
    assert screen_text.count("200 % off") == 1 and screen_text.count("0.0909 %") == 1


@pytest.mark.parametrize("kernel, said", [
    ({"kernel_release": "6.12.43+deb13-rt-amd64", "preemption": "rt"},
     "kernel 6.12.43+deb13-rt-amd64 (PREEMPT_RT)"),
    ({"kernel_release": "6.1.0-18-amd64", "preemption": "dynamic:voluntary"},
     "kernel 6.1.0-18-amd64 (PREEMPT_DYNAMIC, preempt=voluntary)"),
    ({"kernel_release": "5.10.0-armmp", "preemption": None},
     "kernel 5.10.0-armmp (preemption model unknown)"),
])
def test_each_targets_kernel_and_its_preemption_model_are_said_under_its_evidence(tmp_path, kernel, said):
    store = build(tmp_path / "r", sysinfo={**VM, **kernel})
    lines = text(screen(store.runs(), "bench", Screen("r", store.sysinfo)))
    assert lines[1].startswith("board: a VM (kvm)") and lines[2] == f"  {said}"


def test_bare_metal_tuned_has_no_limits_and_an_emulated_cpu_says_its_figures_are_no_timing(tmp_path):
    tuned = {**VM, "virtualization": "none", "rt_runtime_us": -1, "isolcpus": [1]}
    store = build(tmp_path / "tuned", sysinfo=tuned)
    lines = text(screen(store.runs(), "bench", Screen("r", store.sysinfo)))
    assert lines[1] == "board: bare metal"
    assert not any("limits these results" in line for line in lines)
    emulated = build(tmp_path / "tcg", sysinfo={**tuned, "virtualization": "qemu", "vm_accel": "tcg"})
    lines = text(screen(emulated.runs(), "bench", Screen("r", emulated.sysinfo)))
    assert lines[1] == "board: emulated (qemu TCG): functional evidence only, never timing evidence"
    assert ("emulated CPU: read these as evidence that every program ran and was measured; no period or "
            "error here is a timing claim") in lines
    assert lines[lines.index("what limits these results on this machine, each with its fix and what it "
                             "would likely change:") + 1].startswith("- an emulated CPU (qemu TCG)")


def test_a_table_of_none_says_what_it_means_and_what_to_do_next(tmp_path, monkeypatch):
    for impl in ERRORS:
        monkeypatch.setitem(ERRORS, impl, {10 * MS: (0.5, 0.2), MS: (1.0, 0.9)})
    store = build(tmp_path / "r")
    lines = text(screen(store.runs(), "bench", Screen("r", store.sysinfo)))
    # on a VM the worst period is said once, beside the VM's stalls that explain it
    assert ("no impl was shown to hold even 10 % at the longest period measured (10 ms). Next: remove the "
            "limits below, then add longer periods (e.g. \"100ms\") to matrix.period to find where each "
            "impl holds") in lines
    assert "each stall is one long period (the worst period here was 100 % off)" in "\n".join(lines)
    bare = build(tmp_path / "bare", sysinfo={**VM, "virtualization": "none"})
    assert ("no impl was shown to hold even 10 % at the longest period measured (10 ms); the worst period "
            "was 100 % off. Next: remove the limits below, then add longer periods (e.g. \"100ms\") to "
            "matrix.period to find where each impl holds") in text(screen(bare.runs(), "bench",
                                                                          Screen("r", bare.sysinfo)))
    for impl in ERRORS:  # measured up to 100 ms: a longer period is 1 s, never the 100 ms measured
        monkeypatch.setitem(ERRORS, impl, {100 * MS: (0.5, 0.2), 10 * MS: (1.0, 0.9)})
    store = build(tmp_path / "r2")
    assert any("(e.g. \"1s\") to matrix.period" in line for line in text(screen(store.runs(), "bench",
                                                                                Screen("r", store.sysinfo))))


def _row(verdict: str, metric: str, n: int = 3, ratio: float = 1.0, ci=(float("nan"), float("nan")),
         by: str = ""):
    return Row(("c-fifo 1ms",), "vpin", metric, "ratio", "lower", "per-run", n, n, "geometric mean", 0.01,
               0.01 * ratio, "ratio of geometric means", ratio, *ci, "welch-t on log values", 0.01, 0.01,
               verdict, tested=bool(verdict), decided_by=by)


def test_decided_verdicts_come_first_with_their_runs_and_guarantee(monkeypatch):
    rows = [_row("undecided", "a", n=2), _row("undecided", "b"), _row("", "load_busy"),
            _row("same", "c", ratio=1.01, ci=(0.95, 1.07), by="equivalence"),
            _row("better", "d", ratio=0.5, ci=(0.4, 0.6), by="sequential test"),
            _row("worse", "e", ratio=2.0, ci=(1.8, 2.2), n=5, by="sequential test")]
    result = Comparison(Selector("image", "1.10"), Selector("image", "1.11"), ("params",), rows)
    monkeypatch.setattr("jitterlab.analysis.compare.compare", lambda *a, **k: result)
    v = verdicts.verdicts([], Selector("image", "1.10"), Selector("image", "1.11"))
    assert verdicts.lines(v, "jitterlab run c.toml --resume --until-decided {pair}") == [
        "image=1.11 vs image=1.10",
        "  worse   c-fifo 1ms (vpin)  e  +100 % [+80 % – +120 %]  — 5 vs 5 runs, ≤ 5 % false better/worse, "
        "however often you look",
        "  better  c-fifo 1ms (vpin)  d  -50 % [-60 % – -40 %]  — 3 vs 3 runs, ≤ 5 % false better/worse, "
        "however often you look",
        "  same    c-fifo 1ms (vpin)  c  +1 % [-5 % – +7 %]  — 3 vs 3 runs, ≤ 5 % false same, however often "
        "you look",
        "  2 undecided: 1 with fewer than 3 runs in a group (now 2 vs 2): measure at least 3, better 5; "
        "1 whose interval still allows a change that matters: more repetitions narrow it (4x the runs "
        "halve it); jitterlab run c.toml --resume --until-decided image=1.10..image=1.11",
    ]


def test_summary_compares_the_two_label_values_of_a_campaign(tmp_path, capsys):
    build(tmp_path / "r", labels=({"image": "1.10"}, {"image": "1.11"})).close()
    assert main(["summary", "--results", str(tmp_path / "r")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "bench: what holds here"
    start = lines.index("image=1.11 vs image=1.10")
    limits = lines.index("what limits these results on this machine, each with its fix and what it would "
                         "likely change:")
    verdict_lines = lines[start + 1:limits]
    assert verdict_lines and all(line.startswith("  ") for line in verdict_lines)
    assert "c-fifo [image=1.10]" in "\n".join(lines) and "c-fifo [image=1.11]" in "\n".join(lines)


def test_summary_refuses_half_a_comparison(tmp_path, capsys):
    build(tmp_path / "r").close()
    assert main(["summary", "--results", str(tmp_path / "r"), "--baseline", "image=1.10"]) == 2
    assert "--baseline and --candidate: give both" in capsys.readouterr().err


def test_rt_throttling_inside_a_container_is_fixed_on_its_host():
    from jitterlab.report.limits import _rt_throttling

    throttled = {"rt_runtime_us": 950000, "rt_period_us": 1000000}
    inside, outside = (SystemFacts.from_json({**throttled, "container": c}) for c in ("docker", "none"))
    assert _rt_throttling("b", inside, []).fix == (
        "sysctl -w kernel.sched_rt_runtime_us=-1 (as root; until reboot) on the host of this container "
        "(docker)")  # the command first: a line folded at 80 columns never ends on a colon
    assert _rt_throttling("b", outside, []).fix.startswith("sysctl -w")
