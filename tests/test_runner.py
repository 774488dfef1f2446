"""Preflight: missing tools and RT permission are reported before anything runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab import runner
from jitterlab.benchmarks.impls import IMPLS, Impl
from jitterlab.campaign import load_campaign
from jitterlab.cli import main
from jitterlab.errors import UserError
from jitterlab.targets.local import LocalTarget


def campaign_file(tmp_path: Path, impl: str, extra: str = "") -> Path:
    path = tmp_path / "c.toml"
    path.write_text(f"""
[campaign]
name = "pre"
duration = "100ms"
{extra}
[[target]]
name = "local"
kind = "local"
workdir = "{tmp_path / 'w'}"
[matrix]
impl = ["{impl}"]
period = ["10ms"]
""")
    return path


def test_missing_tools_are_found_by_name():
    assert runner._missing_tools(LocalTarget(), ["sh", "no-such-tool-xyz"]) == ["no-such-tool-xyz"]


def test_missing_tool_names_the_package_and_who_needs_it(tmp_path, monkeypatch):
    entry = IMPLS._entries["node"]
    fake = Impl(entry.obj.argv_prefix, {"no-such-node-xyz": "nodejs"})
    monkeypatch.setitem(IMPLS._entries, "node", type(entry)(entry.name, entry.help, fake))
    with pytest.raises(UserError) as info:
        runner.open_targets(load_campaign(campaign_file(tmp_path, "node")))
    assert "target 'local': missing tools: no-such-node-xyz (apt install nodejs; needed by impl node)" in str(
        info.value
    )


def _no_rt(monkeypatch):
    real = runner.sysinfo.snapshot

    def snapshot(target):
        return {**real(target), "rt_permission": False}

    monkeypatch.setattr(runner.sysinfo, "snapshot", snapshot)


def test_no_rt_permission_stops_c_fifo_before_anything_runs(tmp_path, monkeypatch, capsys):
    _no_rt(monkeypatch)
    results = tmp_path / "results"
    assert main(["run", str(campaign_file(tmp_path, "c-fifo")), "--results", str(results)]) == 2
    err = capsys.readouterr().err
    assert "does not permit SCHED_FIFO, which impl c-fifo needs" in err
    assert 'on_missing_rt = "fallback"' in err
    assert not results.exists()


def test_no_rt_permission_with_fallback_marks_the_run(tmp_path, monkeypatch):
    _no_rt(monkeypatch)
    campaign = load_campaign(campaign_file(tmp_path, "c-fifo", 'on_missing_rt = "fallback"'))
    [session] = runner.open_targets(campaign)
    try:
        assert session.rt_permitted is False
    finally:
        session.target.close()


def test_no_rt_permission_does_not_matter_without_c_fifo(tmp_path, monkeypatch):
    _no_rt(monkeypatch)
    [session] = runner.open_targets(load_campaign(campaign_file(tmp_path, "python")))
    session.target.close()
