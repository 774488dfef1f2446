"""Copy the runs of one store into another (a board measured offline, added to the lab's shared
database later). Idempotent: a run already in the destination (by its id) is left alone; raw files
are checked against their recorded sha256 before they are accepted. A run whose files are not what
it recorded (a raw file deleted or changed since), or whose rows do not read (its JSON, its campaign's,
its sysinfo's), is not pushed and is named; the others are: pushing into a new store is how the sound
runs of a damaged one are kept."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from jitterlab.model.errors import RuntimeProblem, UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.records import RunRecord
from jitterlab.store.catalog import Store
from jitterlab.store.damage import StoreDamaged


class Damaged(Exception):
    """A run's files in the source store are not what the run recorded: the run is not pushed."""


@dataclass
class Pushed:
    campaigns: int = 0
    runs: int = 0
    skipped: int = 0
    raw_bytes: int = 0
    damaged: list[tuple[str, str]] = field(default_factory=list)  # (run id, why), not pushed


def push(source: Store, dest: Store) -> Pushed:
    """Every campaign and run of `source` that `dest` lacks, with sysinfo, warnings, raw files and
    attachments. Each run is one transaction in `dest`: an interrupted push is resumed by pushing
    again. A damaged run is left out and listed in `damaged`; the push goes on."""
    done = Pushed()
    unread: dict[int, str] = {}  # campaign id -> why its row does not read
    for summary in source.campaigns(damaged=unread):
        camp = source.campaign(summary.id)
        dest_id = dest.find_campaign(camp.name, camp.fingerprint, camp.created_ns)
        if dest_id is None:
            dest_id = dest.new_campaign(camp.name, camp.fingerprint, camp.source_path, camp.source,
                                        dict(camp.labels), created_ns=camp.created_ns,
                                        version=camp.jitterlab_version)
            for target, w in source.target_warnings(camp.id):  # the targets' own, once
                dest.add_warnings(dest_id, [w], target=target)
            done.campaigns += 1
        have = set(dest.run_ids(dest_id).values())
        sysinfo_ids: dict[int, int] = {}
        warnings = source.warnings(camp.id)
        unread_runs: dict[str, str] = {}
        for run in source.runs(camp.id, damaged=unread_runs):
            if run.id in have:
                done.skipped += 1
                continue
            try:
                files = _attachments(source, run)
                if run.sysinfo_id is not None and run.sysinfo_id not in sysinfo_ids:
                    info = _sysinfo(source, run.sysinfo_id)
                    sysinfo_ids[run.sysinfo_id] = dest.add_sysinfo(dest_id, run.target, info)
                raw_path = _adopted_raw(source, dest, run)
            except Damaged as exc:
                done.damaged.append((run.id, str(exc)))
                continue
            sysinfo_id = sysinfo_ids.get(run.sysinfo_id) if run.sysinfo_id is not None else None
            # ids remapped; the attachments are written by the commit
            moved = replace(run, campaign_id=dest_id, raw_path=raw_path, sysinfo_id=sysinfo_id,
                            attachments={})
            if raw_path:
                done.raw_bytes += (dest.root / raw_path).stat().st_size
            dest.commit_run(moved, [w for run_id, w in warnings if run_id == run.id], files=files)
            done.runs += 1
        done.damaged += [(run_id, f"its {why}") for run_id, why in unread_runs.items()]
    for campaign_id, why in unread.items():
        done.damaged += [(run_id, f"its campaign #{campaign_id}'s {why}")
                         for run_id in source.run_ids(campaign_id).values()]
    return done


def _sysinfo(source: Store, sysinfo_id: int) -> SystemFacts:
    """The sysinfo a run was measured under ({} when its row is gone); Damaged when it does not read."""
    try:
        return source.sysinfo(sysinfo_id) or SystemFacts.from_json({})
    except StoreDamaged as exc:
        if exc.row is None:
            raise
        raise Damaged(f"its sysinfo #{sysinfo_id}'s {exc.row.detail}") from None


def _attachments(source: Store, run: RunRecord) -> dict[str, bytes]:
    """The run's attachments (name -> bytes) read from the source; Damaged when one is gone."""
    files = {}
    for name, path in run.attachments.items():
        try:
            files[name] = (source.root / path).read_bytes()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise Damaged(f"its attachment {path} is missing") from None
    return files


def _adopted_raw(source: Store, dest: Store, run: RunRecord) -> str | None:
    """The run's raw file copied into the destination (verified); its path there. Damaged when the
    source's file is missing or is not the bytes the run recorded."""
    if not run.raw_path:
        return None
    if not run.raw_sha256:
        raise Damaged(f"its raw file {run.raw_path} has no recorded sha256, so it cannot be verified")
    path = source.root / run.raw_path
    if not path.is_file():
        raise Damaged(f"its raw file {run.raw_path} is missing")
    try:
        return dest.adopt_raw(run.id, path, run.raw_sha256)
    except RuntimeProblem:
        raise
    except UserError:  # the copy is not the bytes the run recorded (and was not kept)
        raise Damaged(f"its raw file {run.raw_path} was changed after the run (its sha256 differs)") from None
