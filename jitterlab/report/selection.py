"""Which runs a view shows when a person names a campaign, or none: the latest measurement of each
label set of the named campaigns (default: the campaign measured last), so that image=A and
image=B measured with `run --label` are shown together wherever one of them is (summary, show,
report); and what was left out, with the option that shows it."""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from jitterlab.model.campaigns import CampaignEntry
from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.model.registry import did_you_mean
from jitterlab.report.format import counted


@dataclass
class Selection:
    campaigns: list[CampaignEntry]  # as Store.campaigns() gives them, oldest first
    runs: list[RunRecord]
    others: list[dict] = field(default_factory=list)  # the store's other campaign names: name, n_runs
    replaced: int = 0  # runs of an earlier measurement of a shown label set (measured again since)

    @property
    def names(self) -> list[str]:
        return list(dict.fromkeys(c.name for c in self.campaigns))

    def groups(self) -> str:
        """"tiny [image=A], tiny [image=B]": what is shown, each label set once."""
        return ", ".join(campaign_title(c) for c in self.campaigns)

    def left_out(self, command: str) -> list[str]:
        """What the view does not show, each with how to show it (`command`: the view's own, e.g.
        "jitterlab show --results results", to which --campaign NAME is added)."""
        out = []
        if self.others:
            listed = ", ".join(f"{c['name']} ({counted(c['n_runs'], 'run')})" for c in self.others)
            first = self.others[0]["name"]
            out.append(f"not shown: {'campaign' if len(self.others) == 1 else 'campaigns'} {listed} of this "
                       f"store: {command} --campaign {first}")
        if self.replaced:
            out.append(f"not shown: {counted(self.replaced, 'run')} of earlier measurements of the same "
                       "labels "
                       "(measured again since; jitterlab export has every run)")
        return out


def campaign_title(c: CampaignEntry) -> str:
    labels = ", ".join(f"{k}={v}" for k, v in sorted(c.labels.items()))
    return f"{c.name} [{labels}]" if labels else c.name


def _latest_of_each_label_set(known: list[CampaignEntry], name: str) -> tuple[list[CampaignEntry], int]:
    """The campaigns of `name` a view shows (oldest first), and the runs of those they replaced."""
    latest: dict[str, CampaignEntry] = {}
    replaced = 0
    for c in known:  # oldest first: a later measurement of the same labels replaces an earlier one
        if c.name == name:
            key = json.dumps(dict(c.labels), sort_keys=True)
            replaced += latest[key].n_runs if key in latest else 0
            latest[key] = c
    return sorted(latest.values(), key=lambda c: c.id), replaced


def select(store, names: list[str] | None = None) -> Selection:
    """The latest campaign of each label set of every name in `names` (default: the name of the
    campaign measured last), their runs, and what else the store holds."""
    known = store.campaigns()
    if not known and not names:
        raise UserError(f"{store.where}: the store is empty; run a campaign first "
                        "(jitterlab run CAMPAIGN) or import a capture (jitterlab import edges)")
    wanted = list(dict.fromkeys(names or [known[-1].name]))
    chosen: list[dict] = []
    replaced = 0
    for name in wanted:
        mine, earlier = _latest_of_each_label_set(known, name)
        if not mine:
            there = {k.name for k in known}
            raise UserError(f"--campaign {name!r}: not in {store.where}; {did_you_mean(name, there)}"
                            f"campaigns there: {', '.join(sorted(there)) or 'none'}")
        chosen += mine
        replaced += earlier
    chosen.sort(key=lambda c: c.id)
    others = []  # the campaign measured last first
    for name in dict.fromkeys(c.name for c in reversed(known)):
        if name not in wanted:
            shown = _latest_of_each_label_set(known, name)[0]
            others.append({"name": name, "n_runs": sum(c.n_runs for c in shown)})
    runs = [r for c in chosen for r in store.runs(c.id)]
    return Selection(chosen, runs, others, replaced)
