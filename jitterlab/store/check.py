"""What `jitterlab check` finds in a store: every row that does not read (a campaign's, a run's, a
sysinfo's) and every run whose files are not what it recorded. A store without a table or a column,
or whose database file does not read, does not open at all (StoreDamaged)."""

from __future__ import annotations

from dataclasses import dataclass, field

from jitterlab.store.catalog import Store
from jitterlab.store.damage import StoreDamaged


@dataclass
class Findings:
    campaigns: int = 0  # rows read, damaged ones included
    runs: int = 0
    raw_files: int = 0
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (whose: "run 1a2b", why)
    files_damaged: int = 0  # of `damaged`: a raw file or attachment (measured again, not restored)


def scan(store: Store) -> Findings:
    """Read every campaign, run and sysinfo row the commands read, and hash every raw file."""
    found = Findings()
    unread_campaigns: dict[int, str] = {}
    found.campaigns = len(store.campaigns(damaged=unread_campaigns)) + len(unread_campaigns)
    found.damaged += [(f"campaign #{cid}", why) for cid, why in unread_campaigns.items()]
    unread_runs: dict[str, str] = {}
    runs = store.runs(damaged=unread_runs)
    found.runs = len(runs) + len(unread_runs)
    found.damaged += [(f"run {run_id}", why) for run_id, why in unread_runs.items()]
    for sysinfo_id in sorted({r.sysinfo_id for r in runs if r.sysinfo_id is not None}):
        try:
            store.sysinfo(sysinfo_id)
        except StoreDamaged as exc:
            if exc.row is None:
                raise
            found.damaged.append((exc.row.whose, exc.row.detail))
    for run in runs:
        found.raw_files += bool(run.raw_path)
        if why := store.file_damage(run):
            found.damaged.append((f"run {run.id}", why))
            found.files_damaged += 1
    return found
