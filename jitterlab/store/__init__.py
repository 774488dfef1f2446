"""Where results are kept: a results directory (SQLite + Parquet) or a PostgreSQL catalog."""

from __future__ import annotations

import argparse
import os

RESULTS_ENV = "JITTERLAB_RESULTS"


def results_arg(text: str) -> str:
    """--results: a PostgreSQL URL as it is, else a directory path (checked like every path)."""
    from jitterlab.cli.paths import path_arg
    from jitterlab.store.postgres import is_url

    return text if is_url(text) else str(path_arg(text))


def add_results_option(parser: argparse.ArgumentParser) -> None:
    """--results DIR|URL, defaulting to $JITTERLAB_RESULTS, else ./results."""
    default = os.environ.get(RESULTS_ENV) or "results"
    parser.add_argument(
        "--results", type=results_arg, default=default, metavar="DIR|URL",
        help=f"results directory, or a PostgreSQL URL postgresql://user@host/db?raw_dir=DIR "
             f"(default: ${RESULTS_ENV}, else ./results; now {default})")
