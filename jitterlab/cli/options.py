"""Options several commands share, defined once: --results, --campaign (a selection of runs) and
--trend/--by."""

from __future__ import annotations

import argparse
import os

from jitterlab.cli.paths import name_arg
from jitterlab.model.errors import UserError, shown
from jitterlab.model.labels import CONTROL, MAX_NAME
from jitterlab.store import RESULTS_ENV, results_spec


def add_results(parser: argparse.ArgumentParser) -> None:
    """--results DIR|URL, defaulting to $JITTERLAB_RESULTS, else ./results. The store checks the text
    (a path the system can take, a URL of a backend it speaks) and says what is wrong in one line."""
    default = os.environ.get(RESULTS_ENV) or "results"
    parser.add_argument(
        "--results", type=results_spec, default=default, metavar="DIR|URL",
        help=f"results directory, or a PostgreSQL URL postgresql://user@host/db?raw_dir=DIR "
             f"(default: ${RESULTS_ENV}, else ./results; now {default})")


def add_campaigns(parser: argparse.ArgumentParser, what: str,
                  default: str = "every run of the store") -> None:
    """--campaign NAME, repeatable: the runs that report and compare look at (`default`: without it)."""
    parser.add_argument("--campaign", action="append", type=name_arg, metavar="NAME",
                        help=f"campaign name (its latest run of each label set, e.g. image=A and "
                        f"image=B); repeat to {what} several (default: {default})")


class _DefaultBy(str):
    """--by's default, told apart from a --by that was given (which needs --trend)."""


def _metric_name(text: str) -> str:
    """A METRIC (--trend, --watch): a metric's name, never empty (an empty one would be no trend at all,
    or a watch that can only fail once the campaign is measured)."""
    if not text.strip() or len(text) > MAX_NAME or CONTROL.search(text):
        raise argparse.ArgumentTypeError(f"give a metric's name, e.g. max_rel_period_error, "
                                         f"got {shown(text)}")
    return text.strip()


def add_trend(parser: argparse.ArgumentParser, verb: str) -> None:
    """--trend METRIC and --by KEY: a metric over label values, campaigns or time (check_trend after
    parsing: --by without --trend is refused)."""
    parser.add_argument("--trend", metavar="METRIC", type=_metric_name,
                        help=f"instead: {verb} METRIC over label values, campaigns or days, one line per "
                        "cell (a long-term plot), from every campaign of the store or those of --campaign")
    parser.add_argument("--by", default=_DefaultBy("campaign"), metavar="KEY",
                        help="with --trend: a label key (kernel, image), or time (each run: monitoring), "
                        "date or campaign (default)")


def check_trend(args: argparse.Namespace) -> None:
    """--by says how a trend is drawn: without --trend it would be ignored without a word."""
    if args.trend is None and not isinstance(args.by, _DefaultBy):
        raise UserError(f"--by {shown(args.by)}: only with --trend METRIC (a metric over label values, "
                        "campaigns or time); add --trend or leave out --by")


MAX_EXTRA_RUNS = 1_000_000  # --max-runs: more than a year of 30 s runs, far below any overflow


def _extra_runs(text: str) -> int:
    """--max-runs N: a whole number of runs, 0 to MAX_EXTRA_RUNS (a number past int64 was taken and
    never said to be absurd)."""
    digits = text.strip()
    if not (digits.isascii() and digits.isdigit()) or int(digits) > MAX_EXTRA_RUNS:
        raise argparse.ArgumentTypeError(f"give a whole number of extra runs from 0 to {MAX_EXTRA_RUNS:,}, "
                                         f"got {shown(text)}")
    return int(digits)


def add_until_decided(parser: argparse.ArgumentParser) -> None:
    """--until-decided BASELINE..CANDIDATE and its bounds (run)."""
    parser.add_argument(
        "--until-decided", metavar="BASELINE..CANDIDATE",
        help="after the campaign's runs, compare the two groups (selectors as compare takes them, e.g. "
        "target=standard..target=rt or image=1.10..image=1.11) and add repetitions only to the cells "
        "whose verdict is still undecided, until every watched verdict is better, worse or same, or a "
        "bound is reached (an image campaign flashes and boots both images again for each round); "
        "with --resume it goes on where it stopped")
    parser.add_argument("--watch", action="append", metavar="METRIC", type=_metric_name,
                        help="with --until-decided: the metric whose verdicts must be decided; repeatable "
                        "(default: each benchmark's headline metrics)")
    parser.add_argument("--max-runs", type=_extra_runs, metavar="N",
                        help="with --until-decided: at most N extra runs in all, counted over resumes "
                        "(default: 10 per cell of the campaign)")
    parser.add_argument("--max-time", metavar="DURATION",
                        help="with --until-decided: no round of extra runs that would end after this "
                        "(default: 1h)")
