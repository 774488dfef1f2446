"""Whether a run's probe watched the program's pin: an instrument may watch another signal (its
own test pattern, a simulated instrument, a wire on the wrong pin). Such a run is stored whole,
with the metric PIN_WATCHED = 0 on its probe; its figures describe that other signal, so every
table shows them with NOT_WATCHED beside them and the envelope leaves the run out. A run without
the metric (a probe that reads the program's pin by construction: vpin, self) watched it."""

from __future__ import annotations

from jitterlab.model.records import Metric, RunRecord

PIN_WATCHED = "program_pin_watched"
NOT_WATCHED = "not the program's pin"


def pin_watched_metric(probe: str, watched: bool) -> Metric:
    """The stored mark: 1 when `probe` watched the program's pin, 0 when it watched another signal."""
    return Metric(PIN_WATCHED, 1.0 if watched else 0.0, "", probe, "none")


def watched_program_pin(run: RunRecord) -> bool:
    """False when a probe of the run is marked as having watched another signal."""
    return not any(m.name == PIN_WATCHED and not m.value for m in run.metrics.values())
