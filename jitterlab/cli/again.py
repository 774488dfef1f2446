"""The commands jitterlab prints for a person to run next. Each must run as printed: its words
quoted for a shell, and every option that picks what it goes on with (--results, the --label values
a campaign was run with: `run --resume` finds the campaign by them)."""

from __future__ import annotations

import shlex
from collections.abc import Iterable


def command(*words: str) -> str:
    """`jitterlab WORDS...`, quoted as a shell takes it."""
    return shlex.join(["jitterlab", *words])


def label_options(labels: Iterable[str]) -> list[str]:
    """["--label", "image=B", ...] for KEY=VALUE texts."""
    return [w for pair in labels for w in ("--label", pair)]


def resume_run(campaign: str, results: str, labels: Iterable[str], *more: str,
               tunings: str | None = None) -> str:
    """`jitterlab run CAMPAIGN --results R --resume [--label K=V ...] [--tuning T,...] MORE...`
    (`tunings`: the --tuning the campaign was run with, which makes its cells)."""
    from jitterlab.store import shown_spec

    tuning = ["--tuning", tunings] if tunings is not None else []
    return command("run", campaign, "--results", shown_spec(results), "--resume", *label_options(labels),
                   *tuning, *more)
