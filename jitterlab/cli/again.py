"""The commands jitterlab prints for a person to run next. Each must run as printed: its words
quoted for a shell, and every option that picks what it goes on with (--results, the --label values
a campaign was run with: `run --resume` finds the campaign by them)."""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Iterable, Mapping


def command(*words: str) -> str:
    """`jitterlab WORDS...`, quoted as a shell takes it."""
    return shlex.join(["jitterlab", *words])


def label_options(labels: Iterable[str]) -> list[str]:
    """["--label", "image=B", ...] for KEY=VALUE texts."""
    return [w for pair in labels for w in ("--label", pair)]


def labels_beyond_file(labels: Mapping[str, object], source: str) -> list[str]:
    """The KEY=VALUE labels a campaign was run with that its file (`source`, as stored) does not set
    itself: those `run --label` gave, which `run --resume` needs again to find the campaign. A file
    that does not read (stored by an older jitterlab, say) sets none: every label is given."""
    try:
        own = tomllib.loads(source).get("campaign", {}).get("labels", {})
    except (tomllib.TOMLDecodeError, AttributeError):
        own = {}
    own = own if isinstance(own, dict) else {}
    return [f"{k}={v}" for k, v in sorted(labels.items()) if k not in own or str(own[k]) != str(v)]


def resume_run(campaign: str, results: str, labels: Iterable[str], *more: str) -> str:
    """`jitterlab run CAMPAIGN --results R --resume [--label K=V ...] MORE...`."""
    from jitterlab.store import shown_spec

    return command("run", campaign, "--results", shown_spec(results), "--resume", *label_options(labels),
                   *more)
