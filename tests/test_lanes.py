"""The suite's two lanes: `make test` runs every test but those with the `vm` marker, `make test-vm`
runs those, and CI (.ci/run) runs both: a test is in exactly one lane, and no lane is left out of CI."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent


def _pytest_markers(target: str) -> list[str]:
    """The -m expression of each pytest command `make TARGET` runs (make -n: printed, not run)."""
    done = subprocess.run(["make", "-n", "-C", str(REPO), target], capture_output=True, text=True, check=True)
    found = []
    for line in done.stdout.splitlines():
        argv = shlex.split(line) if " -m pytest " in line else []
        if "pytest" in argv:
            found.append(argv[argv.index("-m", argv.index("pytest") + 1) + 1] if "-m" in argv else "")
    return found


@pytest.mark.skipif(shutil.which("make") is None, reason="needs make")
def test_make_test_and_make_test_vm_split_the_suite_by_the_vm_marker_and_ci_runs_both():
    assert _pytest_markers("test") == ["not vm"]
    assert _pytest_markers("test-vm") == ["vm"]
    ci = [shlex.split(line) for line in (REPO / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    makes = [argv[1:] for argv in ci if argv and argv[0] == "make"]
    assert makes == [["test", "test-vm"]], ci
