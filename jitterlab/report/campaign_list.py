"""`jitterlab show` without a run: the campaigns of a store, one line each — its label sets, its
runs (and how many were not ok), when it last ran, its headline metric by the metric's own summary
rule, and the verdict of its comparison where one was decided, judged as `summary` judges it."""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from rich.table import Table
from rich.text import Text

from jitterlab.analysis.groups import label_pairs
from jitterlab.analysis.reading import reading
from jitterlab.analysis.summary import WORST, summarize_metrics, worst
from jitterlab.model.records import RunRecord
from jitterlab.report import verdicts
from jitterlab.report.format import counted, format_value
from jitterlab.report.traits import benchmark_traits, own_metric
from jitterlab.report.words import metric_words

MAX_JUDGED = 3  # campaigns whose verdicts are judged (the latest): each reads every run's samples


@dataclass(frozen=True)
class CampaignLine:
    """One campaign as the list shows it, from the runs kept (the latest of each label set)."""

    name: str
    runs: list[RunRecord]
    earlier: int  # runs of earlier measurements of the same label sets, not shown

    @property
    def last_ns(self) -> int:
        return max(r.started_ns for r in self.runs)


def label_sets(runs: list[RunRecord]) -> str:
    """"image=A, image=B": the label sets of the runs, each once ("—" when they have none)."""
    sets = dict.fromkeys(" ".join(f"{k}={v}" for k, v in sorted(r.labels.items())) for r in runs)
    return ", ".join(s for s in sets if s) or "—"


@dataclass(frozen=True)
class Headline:
    """A campaign's headline in words, and its worst run by that metric (None without one)."""

    text: str
    worst: RunRecord | None


def headline(runs: list[RunRecord]) -> Headline:
    """The campaign's headline: the first headline metric of its most measured benchmark, summarized
    over its ok runs by the metric's rule ("squarewave: maximum relative period error 16,687 % (worst
    of 48 runs)"), and how many other benchmarks it measured."""
    by_bench = Counter(r.benchmark for r in runs)
    bench = by_bench.most_common(1)[0][0]
    mine = [r for r in runs if r.benchmark == bench and r.status == "ok"]
    others = f"; {counted(len(by_bench) - 1, 'other benchmark')}" if len(by_bench) > 1 else ""
    for name in benchmark_traits(bench).headline:
        found = {r.id: m for r in mine if (m := own_metric(r, name))}
        summary = summarize_metrics(list(found.values()))
        if summary is not None:
            of = f"{'worst' if summary.rule == WORST else 'median'} of {len(found):,} runs"
            first = next(iter(found.values()))
            value = worst([m.value for m in found.values()], name, reading(first).direction)
            run = next(r for r in mine if r.id in found and found[r.id].value == value)
            return Headline(f"{bench}: {metric_words(name)} {format_value(summary.value, first.unit)} ({of})"
                            f"{others}", run)
    return Headline(f"{bench}: no ok run with a headline value{others}", None)


def verdict(runs: list[RunRecord], samples: Callable | None) -> str:
    """What the comparisons of the campaign's label values decided, counted per verdict ("image=B vs
    image=A: 2 worse, 1 better; 161 undecided"); "" when its runs have one label set."""
    out = []
    for baseline, candidate in label_pairs(runs):
        v = verdicts.verdicts(runs, baseline, candidate, samples)
        if v.problem:
            out.append(f"{v.title}: not compared")
            continue
        decided = ", ".join(f"{n} {which}" for which, n in v.counts.items() if n)
        undecided = v.undecided_few + v.undecided_wide
        text = decided or "none decided"
        out.append(f"{v.title}: {text}" + (f"; {undecided} undecided" if undecided else ""))
    return "; ".join(out)


def campaigns_table(lines: list[CampaignLine], samples: Callable | None) -> Table:
    """The campaigns, oldest first; the verdicts of the MAX_JUDGED latest judged."""
    table = Table(title=counted(len(lines), "campaign"))
    for name, justify in (("campaign", "left"), ("labels", "left"), ("runs", "right"), ("last run", "left"),
                          ("headline", "left"), ("verdict", "left")):
        table.add_column(name, justify=justify, no_wrap=name in ("runs", "last run"))  # type: ignore[arg-type]
    judged = {id(line) for line in sorted(lines, key=lambda x: x.last_ns)[-MAX_JUDGED:]}
    for line in sorted(lines, key=lambda x: x.last_ns):
        not_ok = sum(r.status != "ok" for r in line.runs)
        runs = f"{len(line.runs):,}" + (f" ({not_ok:,} not ok)" if not_ok else "")
        said = verdict(line.runs, samples) if id(line) in judged else "(not judged here: see below)"
        table.add_row(Text(line.name), Text(label_sets(line.runs)), runs, _when(line.last_ns),
                      Text(headline(line.runs).text), Text(said or "—"))
    return table


def _when(ns: int) -> str:
    return dt.datetime.fromtimestamp(ns / 1e9).strftime("%Y-%m-%d %H:%M:%S")
