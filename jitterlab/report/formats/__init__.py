"""Export formats, one module each; importing this package registers them all in EXPORTERS.

A new format is one module that registers its Exporter (see base.py), plus its import here.
"""

from jitterlab.report.formats import csv, json, junit, kcidb, lava, parquet  # noqa: F401  (register them)
from jitterlab.report.formats.base import EXPORTERS, Exporter

__all__ = ["EXPORTERS", "Exporter"]
