"""An image campaign: the same cells measured on every system image a board is flashed with,
unattended. Any target whose [[target]] names images (targets/images.py) and that can be flashed
(capabilities.FlashesImages: today a labgrid board with power, image writer and console drivers)
takes part. For each label value, in natural order, every board is flashed and booted in parallel,
the campaign runs with that label, and the next image follows. A board that fails to flash or boot
has its runs of that image stored as failed with the console's last words; the other boards go on.

It lives here, not with a target kind: it is a way of running a campaign (preflight, the runner, a
campaign per image in the store) that asks its boards only for capabilities, so a board of another
kind that can be flashed takes part without a change here."""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import threading
import time
from collections.abc import Callable
from pathlib import Path

from jitterlab import plugins
from jitterlab.analysis.trend import natural
from jitterlab.campaign.cells import names
from jitterlab.campaign.file import Campaign, TargetSpec
from jitterlab.execution.image_rounds import until_images_decided
from jitterlab.execution.preflight import TargetSession, lost_session, preflight
from jitterlab.execution.runner import Outcome, Runner
from jitterlab.execution.until_decided import Asked, Ended, ExtraRun, Watch
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.facts import ImageFacts
from jitterlab.store.catalog import Store
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import FlashesImages, Wrapper, host_key_warning, need
from jitterlab.targets.images import ImageOptions, check_labels_free, split_image_options

Notice = Callable[[str, str], None]
# what measures a board's runs of an image again: not --resume, which an image campaign refuses
AGAIN = "run the campaign again: an image campaign measures every image afresh"
CONNECT_RETRY_S = 2.0  # between attempts to reach a booted image whose sshd is still starting


def image_targets(campaign: Campaign) -> list[tuple[TargetSpec, ImageOptions]]:
    """The targets that name images; every target must, when one does."""
    found = []
    for spec in campaign.targets:
        if "images" not in spec.options:  # image keys without images are the kind's own to refuse
            continue                      # (a qemu target's boot_timeout is its own option)
        where = spec.where or f"{campaign.path}: target {spec.name!r}"
        _, images = split_image_options(spec.options, where)
        if images is not None:
            check_labels_free(images, campaign.labels, f"{where}.image_label")
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
               notice: Notice, progress=None, *, watch: Watch | None = None, resume: bool = False,
               why: Callable[[Asked], None] | None = None) -> Images:
    """Every image value in turn: flash, boot, measure; then, with `watch`, rounds that flash, boot
    and measure the two watched images again until their verdicts are decided (image_rounds.py).
    `resume` (with `watch` only): each image's latest campaign goes on; an image none of whose runs
    is pending is not flashed. Each board is opened once (its place acquired, its env loaded) and
    kept for every image."""
    label = boards[0][1].label
    values = sorted({v for _, options in boards for v, _ in options.images}, key=natural)
    opened: dict[str, Target] = {}
    result = Images()
    try:
        for spec, _ in boards:
            factory = plugins.TARGETS.get(spec.kind, f"{campaign.path}: target.kind")
            opened[spec.name] = factory(spec.name, spec.options, spec.where or None)
        flashed = {name: need(target, FlashesImages, f"{campaign.path}: target {name!r} names images")
                   for name, target in opened.items()}
        for name, target in opened.items():  # said before the first flash, as for any run
            if (warning := host_key_warning(target)) is not None:
                notice(name, f"warning: {warning.message} — {warning.remedy}")

        def image(value: str, runners: list[Runner], campaign_id: int, what: str = "") -> Outcome:
            """Flash and boot the boards the runners measure with the image once, then measure what
            each runner measures."""
            measuring = {c.target for r in runners for c in r.campaign.cells}
            booted = [b for b in boards if b[0].name in measuring]
            notice("", f"{label}={value}: flashing and booting {len(booted)} board(s){what}")
            started = time.monotonic()
            sessions = _boot_all(runners[0].campaign, booted, opened, flashed, value, notice)
            result.boot_s[value] = time.monotonic() - started  # a round's estimate counts it
            total = Outcome(campaign_id)
            try:
                for runner in runners:
                    outcome = runner.execute(sessions, campaign_id)
                    total.done, total.skipped = total.done + outcome.done, total.skipped + outcome.skipped
                    total.failed += outcome.failed
                    if outcome.interrupted:
                        total.interrupted = True
                        break
            finally:
                for board in flashed.values():
                    with contextlib.suppress(Exception):
                        board.disconnect()
            return total

        for value in values:
            measured = dataclasses.replace(campaign, labels={**campaign.labels, label: value})
            runner = Runner(measured, store, notice=notice, progress=progress, retry_hint=AGAIN,
                            resume=resume)
            campaign_id = runner.campaign_id()
            result.ids[value] = campaign_id
            if resume and not runner.pending(campaign_id)[0]:
                continue  # nothing of this image to measure: not flashed
            outcome = image(value, [runner], campaign_id)
            result.done.append((value, campaign_id, outcome))
            if outcome.interrupted:
                return result
        if watch is None:
            return result

        def again(value: str, plan: list[ExtraRun]) -> Outcome:
            """One image's runs of a round after one boot: a runner per repetition number (cells may
            be at different ones after an interrupted round)."""
            measured = dataclasses.replace(campaign, labels={**campaign.labels, label: value})
            reps = sorted({x.repetition for x in plan})
            runners = [Runner(dataclasses.replace(measured, repetitions=rep + 1,
                                                  cells=[x.cell for x in plan if x.repetition == rep]),
                              store, notice=notice, progress=progress, retry_hint=AGAIN,
                              only_repetitions={rep})
                       for rep in reps]
            return image(value, runners, result.ids[value], f" again (repetition #{reps[-1] + 1})")

        result.ended = until_images_decided(campaign, store, result.ids, watch, names=names(), measure=again,
                                            why=why or (lambda asked: None), boot_s=result.boot_s)
    finally:
        for target in opened.values():
            with contextlib.suppress(Exception):
                target.close()
    return result


@dataclasses.dataclass
class Images:
    """What run_images measured: (value, campaign id, outcome) of each image measured in the first
    pass, each image's campaign, its last boot (seconds from flashing to ready for runs: power,
    boot and preflight of every board) and how --until-decided's rounds ended (None without)."""

    done: list[tuple[str, int, Outcome]] = dataclasses.field(default_factory=list)
    ids: dict[str, int] = dataclasses.field(default_factory=dict)
    boot_s: dict[str, float] = dataclasses.field(default_factory=dict)
    ended: Ended | None = None


def _boot_all(campaign: Campaign, boards: list[tuple[TargetSpec, ImageOptions]], opened: dict[str, Target],
              flashed: dict[str, FlashesImages], value: str, notice: Notice) -> list[TargetSession]:
    ready: dict[str, TargetSession] = {}
    errors: list[BaseException] = []
    # set by each thread as it ends: Thread.join can be fooled by an interrupt (CPython gh-90882)
    ended = {spec.name: threading.Event() for spec, _ in boards}

    def one(spec: TargetSpec, options: ImageOptions) -> None:
        try:
            ready[spec.name] = _boot_one(campaign, spec, opened[spec.name], flashed[spec.name], options,
                                         value, notice)
        except BaseException as exc:  # a bug or bad input: raised once every board has finished
            errors.append(exc)
        finally:
            ended[spec.name].set()

    threads = [threading.Thread(target=one, args=b, daemon=True) for b in boards]
    for t in threads:
        t.start()
    for event in ended.values():
        while not event.wait(0.2):
            pass
    if errors:
        raise errors[0]
    return [ready[spec.name] for spec, _ in boards]


def _boot_one(campaign: Campaign, spec: TargetSpec, target: Target, board: FlashesImages,
              options: ImageOptions, value: str, notice: Notice) -> TargetSession:
    image = options.image(value)
    if image is None:
        return lost_session(spec, f"no image for {options.label}={value} in its images")
    try:
        boot_s = board.install(image, options.boot_prompt, options.boot_timeout_s)
        notice(spec.name, f"{Path(image).name} booted in {boot_s:.1f} s (console prompt)")
        _connect(board, options.boot_timeout_s)
        session = preflight(campaign, spec, _Kept(target, board))
    except (TimeoutError, RunFailed) as exc:  # TargetLost is a RunFailed
        reason = exc.reason if isinstance(exc, RunFailed) else str(exc)
        return lost_session(spec, f"{Path(image).name}: {reason}")
    session.info = dataclasses.replace(session.info, image=ImageFacts(path=image, sha256=_sha256(image),
                                                                      console_boot_s=round(boot_s, 3)))
    return session


class _Kept(Wrapper):
    """The board as the runner sees it for one image: closing it ends the connection, not the
    board (the next image is flashed on it)."""

    def __init__(self, target: Target, board: FlashesImages) -> None:
        super().__init__(target)
        self._board = board

    def close(self) -> None:
        self._board.disconnect()


def _connect(board: FlashesImages, timeout_s: float) -> None:
    """Reach the image once it has booted: its sshd may start a moment after the login prompt."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            board.connect()
            return
        except RunFailed:  # TargetLost too
            if time.monotonic() > deadline:
                raise
            time.sleep(CONNECT_RETRY_S)


def _sha256(path: str) -> str:
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()
