"""Copy the runs of one store into another (a board measured offline, added to the lab's shared
database later). Idempotent: a run already in the destination (by its id) is left alone; raw files
are checked against their recorded sha256 before they are accepted."""

from __future__ import annotations

from dataclasses import dataclass, replace

from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.store.catalog import Store


@dataclass
class Pushed:
    campaigns: int = 0
    runs: int = 0
    skipped: int = 0
    raw_bytes: int = 0


def push(source: Store, dest: Store) -> Pushed:
    """Every campaign and run of `source` that `dest` lacks, with sysinfo, warnings, raw files and
    attachments. Each run is one transaction in `dest`: an interrupted push is resumed by pushing
    again."""
    done = Pushed()
    for summary in source.campaigns():
        camp = source.campaign(summary["id"])
        dest_id = dest.find_campaign(camp["name"], camp["fingerprint"], camp["created_ns"])
        if dest_id is None:
            dest_id = dest.new_campaign(
                camp["name"], camp["fingerprint"], camp["source_path"], camp["source"], camp["labels"],
                created_ns=camp["created_ns"], version=camp["jitterlab_version"])
            for target, w in source.target_warnings(camp["id"]):  # the targets' own, once
                dest.add_warnings(dest_id, [w], target=target)
            done.campaigns += 1
        have = set(dest.run_ids(dest_id).values())
        sysinfo_ids: dict[int, int] = {}
        warnings = source.warnings(camp["id"])
        for run in source.runs(camp["id"]):
            if run.id in have:
                done.skipped += 1
                continue
            if run.sysinfo_id is not None and run.sysinfo_id not in sysinfo_ids:
                info = source.sysinfo(run.sysinfo_id)
                sysinfo_ids[run.sysinfo_id] = dest.add_sysinfo(dest_id, run.target, info)
            moved = _moved(source, dest, run, dest_id, sysinfo_ids)
            if moved.raw_path:
                done.raw_bytes += (dest.root / moved.raw_path).stat().st_size
            files = {name: (source.root / path).read_bytes() for name, path in run.attachments.items()}
            dest.commit_run(moved, [w for run_id, w in warnings if run_id == run.id], files=files)
            done.runs += 1
    return done


def _moved(source: Store, dest: Store, run: RunRecord, dest_id: int,
           sysinfo_ids: dict[int, int]) -> RunRecord:
    """The run as the destination stores it: its raw file copied there (verified), ids remapped;
    its attachments are written by the commit."""
    raw_path = None
    if run.raw_path:
        if not run.raw_sha256:
            raise UserError(f"run {run.id}: its raw file has no recorded sha256, so it cannot be verified")
        raw_path = dest.adopt_raw(run.id, source.root / run.raw_path, run.raw_sha256)
    sysinfo_id = sysinfo_ids.get(run.sysinfo_id) if run.sysinfo_id is not None else None
    return replace(run, campaign_id=dest_id, raw_path=raw_path, sysinfo_id=sysinfo_id, attachments={})
