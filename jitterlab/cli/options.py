"""Options several commands share, defined once: --results, --campaign (a selection of runs) and
--trend/--by."""

from __future__ import annotations

import argparse
import os

from jitterlab.cli.paths import name_arg
from jitterlab.store import RESULTS_ENV, results_spec


def add_results(parser: argparse.ArgumentParser) -> None:
    """--results DIR|URL, defaulting to $JITTERLAB_RESULTS, else ./results. The store checks the text
    (a path the system can take, a URL of a backend it speaks) and says what is wrong in one line."""
    default = os.environ.get(RESULTS_ENV) or "results"
    parser.add_argument(
        "--results", type=results_spec, default=default, metavar="DIR|URL",
        help=f"results directory, or a PostgreSQL URL postgresql://user@host/db?raw_dir=DIR "
             f"(default: ${RESULTS_ENV}, else ./results; now {default})")


def add_campaigns(parser: argparse.ArgumentParser, what: str) -> None:
    """--campaign NAME, repeatable: the runs that report and compare look at."""
    parser.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                        help=f"campaign name (its latest run of each label set, e.g. image=A and "
                        f"image=B); repeat to {what} several (default: the latest campaign)")


def add_trend(parser: argparse.ArgumentParser, verb: str) -> None:
    """--trend METRIC and --by KEY: a metric over label values, campaigns or time."""
    parser.add_argument("--trend", metavar="METRIC",
                        help=f"instead: {verb} METRIC over label values, campaigns or days, one line per "
                        "cell (a long-term plot), from every campaign of the store or those of --campaign")
    parser.add_argument("--by", default="campaign", metavar="KEY",
                        help="with --trend: a label key (kernel, image), or time (each run: monitoring), "
                        "date or campaign (default)")
