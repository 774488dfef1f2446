"""An image campaign: the same cells measured on every image a board is flashed with, unattended
(labgrid targets with `images`, see targets/labgrid_images.py). For each label value, in natural
order, every board is flashed and booted in parallel, the campaign runs with that label, and the
next image follows. A board that fails to flash or boot has its runs of that image stored as failed
with the console's last words; the other boards go on."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from jitterlab.analysis.trend import natural
from jitterlab.campaign.file import Campaign, TargetSpec
from jitterlab.execution.preflight import TargetSession, preflight
from jitterlab.execution.runner import Outcome, Runner
from jitterlab.measure.context import Placement
from jitterlab.model.errors import RunFailed, TargetLost, UserError
from jitterlab.store.catalog import Store
from jitterlab.targets.labgrid.images import ImageOptions, install
from jitterlab.targets.labgrid.target import LabgridTarget, parse_options
from jitterlab.targets.unreachable import UnreachableTarget

Notice = Callable[[str, str], None]


def image_targets(campaign: Campaign) -> list[tuple[TargetSpec, ImageOptions]]:
    """The targets that name images; every target must, when one does."""
    found = []
    for spec in campaign.targets:
        images = parse_options(spec.options, f"{campaign.path}: target {spec.name!r}").images \
            if spec.kind == "labgrid" else None
        if images is not None:
            found.append((spec, images))
    if found and len(found) != len(campaign.targets):
        names = ", ".join(s.name for s in campaign.targets if s.name not in {f[0].name for f in found})
        raise UserError(f"{campaign.path}: target {names}: an image campaign flashes every board; give "
                        "each [[target]] its images (or measure those boards in another campaign)")
    labels = {options.label for _, options in found}
    if len(labels) > 1:
        raise UserError(f"{campaign.path}: targets name their images by different labels "
                        f"({', '.join(sorted(labels))}); use one image_label")
    return found


def run_images(campaign: Campaign, store: Store, boards: list[tuple[TargetSpec, ImageOptions]],
               notice: Notice, progress=None) -> list[tuple[str, int, Outcome]]:
    """Every image value in turn: flash, boot, measure. Returns (value, campaign id, outcome).
    Each board is opened once (its place acquired, its env loaded) and kept for every image."""
    label = boards[0][1].label
    values = sorted({v for _, options in boards for v, _ in options.images}, key=natural)
    opened: dict[str, LabgridTarget] = {}
    done = []
    try:
        for spec, _ in boards:
            opened[spec.name] = LabgridTarget(spec.name, parse_options(spec.options, f"target {spec.name!r}"),
                                              connect=False)
        for value in values:
            measured = dataclasses.replace(campaign, labels={**campaign.labels, label: value})
            notice("", f"{label}={value}: flashing and booting {len(boards)} board(s)")
            sessions = _boot_all(measured, boards, opened, value, notice)
            try:
                runner = Runner(measured, store)
                runner.notice = notice
                if progress is not None:
                    runner.progress = progress
                campaign_id = runner.campaign_id()
                outcome = runner.execute(sessions, campaign_id)
            finally:
                for spec, _ in boards:
                    with contextlib.suppress(Exception):
                        opened[spec.name].disconnect()
            done.append((value, campaign_id, outcome))
            if outcome.interrupted:
                break
    finally:
        for target in opened.values():
            with contextlib.suppress(Exception):
                target.close()
    return done


def _boot_all(campaign: Campaign, boards, opened: dict[str, LabgridTarget], value: str,
              notice: Notice) -> list[TargetSession]:
    ready: dict[str, TargetSession] = {}
    errors: list[BaseException] = []

    def one(spec: TargetSpec, options: ImageOptions) -> None:
        try:
            ready[spec.name] = _boot_one(campaign, spec, opened[spec.name], options, value, notice)
        except BaseException as exc:  # a bug or bad input: raised once every board has finished
            errors.append(exc)

    threads = [threading.Thread(target=one, args=b, daemon=True) for b in boards]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.2)
    if errors:
        raise errors[0]
    return [ready[spec.name] for spec, _ in boards]


def _boot_one(campaign: Campaign, spec: TargetSpec, target: LabgridTarget, options: ImageOptions,
              value: str, notice: Notice) -> TargetSession:
    image = options.image(value)
    if image is None:
        return _lost(spec, f"no image for {options.label}={value} in its images")
    try:
        boot_s = install(target.board, image, options)
        notice(spec.name, f"{Path(image).name} booted in {boot_s:.1f} s (console prompt)")
        _connect(target, options.boot_timeout_s)
        session = preflight(campaign, spec, _Kept(target))
    except (TimeoutError, TargetLost, RunFailed) as exc:
        reason = getattr(exc, "reason", None) or str(exc)
        return _lost(spec, f"{Path(image).name}: {reason}")
    session.info.update({"image": image, "image_sha256": _sha256(image), "console_boot_s": round(boot_s, 3)})
    return session


class _Kept:
    """The board as the runner sees it for one image: closing it ends the connection, not the
    board (the next image is flashed on it)."""

    def __init__(self, target: LabgridTarget) -> None:
        self._target = target

    def __getattr__(self, name: str):
        return getattr(self._target, name)

    def close(self) -> None:
        self._target.disconnect()


def _connect(target: LabgridTarget, timeout_s: float) -> None:
    """SSH once the image has booted: its sshd may start a moment after the login prompt."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            target.connect()
            return
        except (TargetLost, RunFailed):
            if time.monotonic() > deadline:
                raise
            time.sleep(2.0)


def _lost(spec: TargetSpec, reason: str) -> TargetSession:
    return TargetSession(spec, UnreachableTarget(spec.name, reason), {}, Placement(None, None), False,
                         lost=reason)


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
