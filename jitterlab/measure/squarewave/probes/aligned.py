"""The ending of every probe whose edges are aligned with the program's own (analysis/alignment.py):
an instrument or an emulator watching from outside the program, on a clock of its own.

When the alignment shows the edges are the program's, the capture is stored on the program's clock
(edges and blind spans moved by the offset) with the fit's figures; otherwise as captured, with a
warning naming why and what to check, and figures marked as not the program's pin's. Either way the
run carries `program_pin_watched`, and blind spans are stored as the probe's `<probe>.blind` series.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from jitterlab.analysis.alignment import FIT_NAMES, Alignment
from jitterlab.analysis.watched import NOT_WATCHED, PIN_WATCHED, pin_watched_metric
from jitterlab.measure.squarewave.probes.base import Capture, no_blind
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import blind_series

# the names aligned_capture adds to a probe's own metrics
ALIGNED_NAMES = ("align_matched_edges", *FIT_NAMES, "unobserved_edges", PIN_WATCHED)


@dataclass(frozen=True)
class Unseen:
    """The program's edges the probe did not see, once its edges are on the program's clock: how
    many, the blind spans around them (program's clock) and what to tell of them."""

    count: int
    blind: np.ndarray = field(default_factory=no_blind)
    warnings: tuple[Warning_, ...] = ()


def aligned_capture(probe: str, t_ns: np.ndarray, level: np.ndarray, fit: Alignment, *,
                    edges: str, fix: str, blind: np.ndarray | None = None, metrics: Sequence[Metric] = (),
                    warnings: Sequence[Warning_] = (),
                    unseen: Callable[[np.ndarray], Unseen] | None = None) -> Capture:
    """The capture of `probe` from its edges (`t_ns`, `level`, blind spans `blind`, on its own clock)
    and their alignment `fit`. `edges` names them in the warning when they are not the program's
    ("the sigrok edges on D0"), `fix` says what to check then; `unseen` counts, given the edges on the
    program's clock, the program's edges the probe missed (stored as `unobserved_edges`)."""
    metrics = [*metrics, Metric("align_matched_edges", float(fit.matched), "count", probe, "none")]
    warnings = list(warnings)
    blind = no_blind() if blind is None else blind
    if fit.watched:
        t_ns, blind = t_ns + fit.offset_ns, blind + fit.offset_ns
        metrics += fit.metrics(probe)
        if unseen is not None:
            missed = unseen(t_ns)
            blind = np.concatenate([blind, missed.blind])
            blind = blind[np.argsort(blind[:, 0], kind="stable")]
            metrics.append(Metric("unobserved_edges", float(missed.count), "count", probe, "lower"))
            warnings += missed.warnings
    else:
        warnings.append(Warning_(f"{edges} are not the program's pin's: {'; '.join(fit.failures)}",
                                 f"{fix}; its figures are marked {NOT_WATCHED!r}"))
    metrics.append(pin_watched_metric(probe, fit.watched))
    return Capture(t_ns, level, blind, metrics=tuple(metrics), warnings=tuple(warnings),
                   series={f"{probe}.blind": blind_series(blind)} if len(blind) else {})
