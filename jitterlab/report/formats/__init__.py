"""Export formats, one module each; importing this package registers them all in EXPORTERS.

A new format is one module that registers its Exporter (see base.py), plus its import here.
"""

from jitterlab.report.formats import csv, json, parquet  # noqa: F401  (register csv, json, parquet)
from jitterlab.report.formats.base import EXPORTERS, Exporter

__all__ = ["EXPORTERS", "Exporter"]
