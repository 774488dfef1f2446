"""A figure of an emulated board's runs says on itself that it is functional evidence, never timing
evidence: in the matplotlib figure (every panel, not the strips under them) and in the SVG and PNG
files the report writes beside it, so that a figure saved or pasted alone still says so."""

from __future__ import annotations

import pytest

from jitterlab.model.facts import SystemFacts
from jitterlab.model.fakes import run_record, squarewave_cell
from jitterlab.model.records import Metric
from jitterlab.report import limits
from jitterlab.report.figures import squarewave as figures
from jitterlab.report.figures.base import EMULATED_MARK, mark_emulated, svg_text
from jitterlab.report.html import render
from tests.report import conftest

MS = 1_000_000
EMULATED = {"virtualization": "qemu", "vm_accel": "tcg", "machine": "aarch64", "vm_host_machine": "x86_64"}


def _run(target: str, impl: str, status: str = "ok"):
    metrics = [Metric("max_rel_period_error", 0.02, "ratio", "emulator")] if status == "ok" else []
    return run_record(squarewave_cell(impl, 10 * MS, target=target), id=f"{target}-{impl}-{status}",
                      cell_key=f"{target}{impl}{status}", status=status, metrics=metrics)


def _marks(fig) -> dict[str, list[str]]:
    """The text marks on each axes, by the axes' gid ("panel" when it has none)."""
    out: dict[str, list[str]] = {}
    for ax in fig.axes:
        out.setdefault(ax.get_gid() or "panel", []).extend(
            t.get_text() for t in ax.texts if t.get_gid() == "emulated-mark")
    return out


def test_an_emulated_targets_figure_carries_the_mark_on_every_panel_and_in_its_svg():
    runs = [_run("board", "c-fifo"), _run("board", "python", "failed")]  # a strip under the panel too
    fig = mark_emulated(figures.envelope_figure(runs, "board"), {"board"}, ["board"])
    marks = _marks(fig)
    assert marks["panel"] == [EMULATED_MARK]
    assert marks["no-value-strip"] == []  # the row of × under the panel stays readable
    assert EMULATED_MARK in svg_text(fig)


def test_a_figure_of_real_hardware_has_no_mark():
    fig = mark_emulated(figures.envelope_figure([_run("pi4", "c-fifo")], "pi4"), {"board"}, ["pi4"])
    assert _marks(fig) == {"panel": []}
    assert "emulated" not in svg_text(fig)


def test_a_figure_of_several_targets_names_the_emulated_ones():
    fig = mark_emulated(figures.envelope_figure([_run("board", "c-fifo")], "board"), {"board", "board-rt"},
                        ["pi4", "board-rt", "board"])
    assert _marks(fig)["panel"] == [f"{EMULATED_MARK}: board, board-rt"]


def test_emulated_is_decided_once_for_terminal_summary_and_figures():
    stored = {1: {**EMULATED}, 2: {"virtualization": "kvm", "vm_accel": "kvm"}, 3: {}}
    infos = {sid: SystemFacts.from_json(json) for sid, json in stored.items()}
    runs = [run_record(squarewave_cell("c-fifo", MS, target=t), id=t, cell_key=t, sysinfo_id=sid)
            for t, sid in (("board", 1), ("vm", 2), ("pi4", 3))]
    assert limits.emulated_targets(runs, infos.__getitem__) == {"board"}
    assert {t for t, sid in (("board", 1), ("vm", 2), ("pi4", 3))
            if limits.evidence(infos[sid])[0] == limits.EMULATED} == {"board"}


@pytest.mark.parametrize("emulated", [True, False])
def test_every_figure_file_of_an_emulated_boards_report_carries_the_mark(tmp_path, monkeypatch, emulated):
    if emulated:
        monkeypatch.setattr(conftest, "SYSINFO", {**conftest.SYSINFO, **EMULATED})
    store = conftest.build_store(tmp_path / "store")
    try:
        report = render(store, tmp_path / "r.html", campaigns=["board-1.10", "board-1.11"], max_run_figures=1)
    finally:
        store.close()
    svgs = [p for p in report.figure_files if p.suffix == ".svg"]
    kinds = {p.stem.split("_")[0] for p in svgs}
    assert kinds >= {"error", "run", "compare"}  # the paper's figure, a run's figures, a comparison
    assert [p.name for p in svgs if (EMULATED_MARK in p.read_text()) != emulated] == []
    html = (tmp_path / "r.html").read_text()
    assert html.count(EMULATED_MARK) >= len(svgs) if emulated else EMULATED_MARK not in html


def test_the_standard_benchmarks_figures_of_an_emulated_target_carry_the_mark(tmp_path, monkeypatch):
    monkeypatch.setattr(conftest, "LATENCY_SYSINFO", {**conftest.LATENCY_SYSINFO, **EMULATED})
    store = conftest.build_latency_store(tmp_path / "latency")
    try:
        report = render(store, tmp_path / "r.html")
    finally:
        store.close()
    svgs = {p.stem: p.read_text() for p in report.figure_files if p.suffix == ".svg"}
    assert set(svgs) == {"cyclictest_latency_max_ns", "cyclictest_distribution"}  # bars and CCDFs
    assert all(EMULATED_MARK in svg for svg in svgs.values())
