"""The `jitterlab` program ends as soon as its command is done (cli/main.py exit_now): its whole output
written, its exit status kept, its exit handlers run, also when its output is a file or a pipe."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def jitterlab(*args: str, **kwargs) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "jitterlab", *args], env=env, capture_output=True,
                          text=True, timeout=120, cwd=ROOT, **kwargs)


def test_the_whole_output_is_written_and_the_status_kept():
    from jitterlab.cli.main import main

    done = jitterlab("list")
    assert done.returncode == 0 and done.stderr == ""
    lines = done.stdout.splitlines()
    assert len(lines) > 50 and lines[0] == "benchmarks"
    assert main(["list"]) == 0  # called in a process (tests), main returns
    bad = jitterlab("show", "--results", str(ROOT / "no-such-results-dir"))
    assert bad.returncode == 2 and bad.stdout == ""
    assert bad.stderr.startswith("error: ") and "no results here" in bad.stderr


def test_exit_handlers_run_before_the_process_ends(tmp_path):
    marker = tmp_path / "handled"
    code = ("import atexit, pathlib, sys; from jitterlab.cli.main import main; "
            f"atexit.register(pathlib.Path({str(marker)!r}).write_text, 'ran'); "
            "sys.argv = ['jitterlab', 'list']; main(); print('main returned')")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0
    assert "main returned" not in done.stdout  # the program ended in main, after its output
    assert done.stdout.splitlines()[0] == "benchmarks"
    assert marker.read_text() == "ran"
