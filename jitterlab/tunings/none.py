"""none: the baseline every tuning is measured against; it changes nothing."""

from __future__ import annotations

from jitterlab.model.tuning import Applied, Cpus
from jitterlab.targets.base import Target
from jitterlab.tunings.base import Keeper, TuningBase, register


@register
class NoTuning(TuningBase):
    name = "none"
    help = "nothing changed: the machine as it is, the baseline the other tunings are compared with"
    changes_machine = False

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        return None

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        return Applied(self.name, cpus)
