"""A store's run files, under the directory its backend names: raw series (raw/*.parquet) and
attachments (attachments/<run id>/<name>). Each is durable under its final name before the row that
names it is committed; the catalog's rows hold paths relative to that directory, so a results
directory can be moved or copied whole."""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.model.records import RunRecord
from jitterlab.model.series import Series
from jitterlab.store.raw import read_raw, sha256_file, write_atomic, write_raw


class RunFiles:
    """Raw series named by run id (one writer directory) or by content hash (`content_addressed`:
    several controllers share the directory, and a copied file is verified by its name)."""

    def __init__(self, root: Path, content_addressed: bool) -> None:
        self.root = root
        self.content_addressed = content_addressed

    def _raw_name(self, run_id: str, sha256: str) -> str:
        return f"raw/{sha256[:2]}/{sha256}.parquet" if self.content_addressed else f"raw/{run_id}.parquet"

    def write_series(self, run_id: str, series: Mapping[str, Series]) -> tuple[str, str]:
        """Write a run's raw series durably; (path relative to the root, sha256)."""
        if not self.content_addressed:
            relative = self._raw_name(run_id, "")
            return relative, write_raw(self.root / relative, series)
        staging = self.root / "raw" / f".{run_id}.{os.getpid()}.parquet"
        sha = write_raw(staging, series)
        relative = self._raw_name(run_id, sha)
        (self.root / relative).parent.mkdir(parents=True, exist_ok=True)
        os.replace(staging, self.root / relative)
        return relative, sha

    def adopt_raw(self, run_id: str, source: Path, sha256: str) -> str:
        """Copy a run's raw file from another store (its sha256 checked); the relative path."""
        relative = self._raw_name(run_id, sha256)
        final = self.root / relative
        if final.exists() and sha256_file(final) == sha256:
            return relative  # the same content is already here
        final.parent.mkdir(parents=True, exist_ok=True)
        staging = final.with_name(f".{run_id}.{os.getpid()}.tmp")
        shutil.copyfile(source, staging)
        if sha256_file(staging) != sha256:
            staging.unlink()
            raise UserError(f"{source}: its sha256 is not the one run {run_id} recorded; the file was "
                            "damaged after the run; it was not pushed")
        os.replace(staging, final)
        return relative

    def write_attachments(self, run_id: str, files: Mapping[str, bytes]) -> dict[str, str]:
        """Write a run's attachments durably under attachments/<run_id>/; name -> relative path."""
        paths = {}
        for name, content in files.items():
            safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in name).lstrip(".") or "file"
            relative = f"attachments/{run_id}/{safe}"
            write_atomic(self.root / relative, content)
            paths[name] = relative
        return paths

    def attachment_rows(self, run: RunRecord) -> list[tuple[str, str, str, str, int]]:
        """(run_id, name, path, sha256, size_bytes) of each attachment of `run`."""
        return [(run.id, name, path, sha256_file(self.root / path), (self.root / path).stat().st_size)
                for name, path in run.attachments.items()]

    def discard(self, raw_path: str | None, attachments: Mapping[str, str]) -> None:
        """Remove files written for a run whose commit failed: no row names them. A hash-named raw
        file may be another run's too, and stays."""
        if raw_path and not self.content_addressed:
            (self.root / raw_path).unlink(missing_ok=True)
        for path in attachments.values():
            (self.root / path).unlink(missing_ok=True)

    def read_series(self, run: RunRecord) -> dict[str, Series]:
        """The run's raw series ({} when it has none); UserError when the file is missing or is
        not the bytes the store recorded."""
        return read_raw(self.root / run.raw_path, run.raw_sha256) if run.raw_path else {}

    def damage(self, raw_path: str, sha256: str | None) -> str | None:
        """Why a raw file is not what its run recorded (missing, other bytes), or None."""
        path = self.root / raw_path
        if not path.is_file():
            return f"{raw_path} is missing"
        if sha256 and sha256_file(path) != sha256.lower():
            return f"{raw_path} is damaged (sha256 differs)"
        return None
