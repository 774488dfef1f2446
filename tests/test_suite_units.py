"""The suite's own schedule (tests/conftest.py): the files it names exist, so a renamed emulator file
cannot fall out of its unit and run beside another emulator, and the emulator units start first."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import EMULATOR_FILES, LONG_FILES, UNITS, _start_rank, _unit_of

ROOT = Path(__file__).resolve().parents[1]


def test_every_file_the_schedule_names_exists():
    named = set().union(*UNITS.values()) | set(LONG_FILES)
    assert sorted(f for f in named if not (ROOT / f).is_file()) == []


def test_the_two_emulator_units_share_no_file_and_start_before_the_longest_other_files():
    guests, labs = UNITS["emulators-guests"], UNITS["emulators-labs"]
    assert not guests & labs and guests | labs == EMULATOR_FILES
    assert not EMULATOR_FILES & set(LONG_FILES)
    assert {_unit_of(f"{f}::t") for f in guests} == {"emulators-guests"}
    assert {_unit_of(f"{f}::t") for f in labs} == {"emulators-labs"}
    assert _unit_of("tests/test_params.py::t") == "tests/test_params.py"  # any other file: its own unit
    emulators = max(_start_rank(f"{f}::t") for f in EMULATOR_FILES)
    longest = [_start_rank(f"{f}::t") for f in LONG_FILES]
    other = _start_rank("tests/test_params.py::t")
    assert emulators < min(longest) and longest == sorted(longest) and max(longest) < other
