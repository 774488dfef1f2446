"""What `jitterlab run` imports before its first run and for its end screen leaves out the libraries
only some steps need (seconds each on a loaded machine): matplotlib (the report's figures), scipy (a
comparison's tests), numba (the squarewave analysis, loaded beside the preflight by the warm-up)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("matplotlib", "scipy", "numba")
# the command line, the campaign and its plug-ins, the runner, and what the run's end screen shows
RUN_PATH = ("jitterlab.cli.main", "jitterlab.campaign.file", "jitterlab.plugins",
            "jitterlab.execution.runner", "jitterlab.execution.preflight", "jitterlab.cli.progress",
            "jitterlab.report.terminal",
            "jitterlab.report.sections", "jitterlab.report.summary_screen", "jitterlab.cli.commands.summary",
            "jitterlab.analysis.squarewave", "jitterlab.analysis.groups")


def loaded_after(modules: tuple[str, ...], whole: bool = False) -> set[str]:
    """The top-level packages loaded once `modules` are imported (whole: every module's full name)."""
    code = ("import importlib, json, sys\n"
            f"for name in {list(modules)!r}: importlib.import_module(name)\n"
            f"print(json.dumps(sorted({{m if {whole} else m.split('.')[0] for m in sys.modules}})))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300, check=True)
    return set(json.loads(done.stdout))


def test_the_run_and_its_end_screen_load_no_plotting_statistics_or_compiler():
    assert loaded_after(RUN_PATH) & set(HEAVY) == set()


def test_what_only_a_labgrid_board_or_debian_kernels_need_waits_for_them():
    """asyncio (labgrid's coordinator: 30 ms) and debian.deb822 (apt's lists: 40 ms) load when used."""
    lazy = {"asyncio", "debian.deb822"}
    assert loaded_after(RUN_PATH, whole=True) & lazy == set()
    assert loaded_after(("jitterlab.targets.labgrid.coordinator", "jitterlab.targets.qemu.apt_state"),
                        whole=True) & lazy == set()


def test_the_check_sees_them_where_they_are_needed():
    assert {"matplotlib", "numba"} <= loaded_after(("jitterlab.report.figures.squarewave",
                                                    "jitterlab.analysis.squarewave_scan"))


def test_the_command_line_is_built_without_the_capture_readers():
    """Every command builds every command's options: the import command's are named without its CSV
    reader, which loads pyarrow's compute and CSV modules (and pydoc through them)."""
    code = ("import json, sys\nfrom jitterlab.cli.main import build_parser\nbuild_parser()\n"
            "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=300, check=True)
    loaded = set(json.loads(done.stdout))
    assert {"pyarrow.compute", "pyarrow.csv", "jitterlab.importers.edges_csv"} & loaded == set()
