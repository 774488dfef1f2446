"""What an installed jitterlab needs besides its Python modules (program sources, templates, the
LAVA test definition, instrument profiles) is declared as package data: a file git tracks under
jitterlab/ that no pattern of pyproject.toml takes would be missing from a wheel."""

from __future__ import annotations

import fnmatch
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent


def tracked_data_files() -> list[Path]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: which files belong to jitterlab is what git tracks")
    listed = subprocess.run(["git", "ls-files", "jitterlab"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.split()
    return [Path(name) for name in listed if not name.endswith(".py")]


def declared(package_data: dict[str, list[str]], path: Path) -> bool:
    for package, patterns in package_data.items():
        base = Path(*package.split("."))
        if base in path.parents:
            inside = path.relative_to(base).as_posix()
            if any(fnmatch.fnmatchcase(inside, p) and inside.count("/") == p.count("/") for p in patterns):
                return True
    return False


def test_every_data_file_under_the_package_is_declared_package_data():
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    files = tracked_data_files()
    assert len(files) > 40  # the program sources, templates, profiles and the LAVA definition
    assert [str(f) for f in files if not declared(package_data, f)] == []


def test_a_file_no_pattern_takes_is_found():
    assert not declared({"jitterlab.programs": ["c/*.c"]}, Path("jitterlab/programs/unit/core.c"))
    assert not declared({"jitterlab.programs": ["*.c"]}, Path("jitterlab/programs/c/observer.c"))
    assert declared({"jitterlab.programs": ["c/*.c"]}, Path("jitterlab/programs/c/observer.c"))
