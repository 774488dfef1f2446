"""Sources that run on targets; SOURCES is where they are."""

from pathlib import Path

SOURCES = Path(__file__).parent
