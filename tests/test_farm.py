"""An image campaign asks its boards only for capabilities: each image is installed on every board,
the board reached, measured with the image's label, disconnected (not closed) between images and
closed once at the end; a board that does not boot fails its runs of that image; a target that
cannot be flashed is one line saying so. No labgrid here: a local target stands in for the board."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.campaign.file import parse_campaign
from jitterlab.execution import farm
from jitterlab.model.errors import UserError
from jitterlab.store.catalog import Store
from jitterlab.targets.capabilities import FlashesImages, Wrapper
from jitterlab.targets.local import LocalTarget


class Board(Wrapper, FlashesImages):
    """A local target that logs what an image campaign asks of a board."""

    def __init__(self, inner: LocalTarget, log: list[str]) -> None:
        super().__init__(inner)
        self.log = log

    def install(self, image: str, boot_prompt: str, boot_timeout_s: float) -> float:
        self.log.append(f"install {Path(image).name} until {boot_prompt!r} ({boot_timeout_s:g}s)")
        if "broken" in image:
            raise TimeoutError("no 'login: ' on the console within 2s after power-on; the console said: "
                               "Kernel panic")
        return 0.5

    def connect(self) -> None:
        self.log.append("connect")

    def disconnect(self) -> None:
        self.log.append("disconnect")

    def close(self) -> None:
        self.log.append("close")
        super().close()


class Kinds:
    """plugins.TARGETS as the farm sees it: every kind opens `opener`."""

    def __init__(self, opener) -> None:
        self.opener = opener

    def get(self, kind: str, where: str):
        return self.opener


def image_campaign(tmp_path: Path, images: dict[str, str]):
    env = tmp_path / "env.yaml"
    env.write_text("targets: {}\n")
    for name in images.values():
        (tmp_path / name).write_bytes(b"image")
    return parse_campaign({
        "campaign": {"name": "ab", "repetitions": 1, "duration": "100ms", "warmup": "10ms"},
        "target": [{"name": "bbb", "kind": "labgrid", "env": str(env), "workdir": str(tmp_path / "w"),
                    "images": {v: str(tmp_path / n) for v, n in images.items()}, "boot_timeout": "2s"}],
        "matrix": {"impl": "python", "period": "10ms", "probe": "self"},
    }, tmp_path / "ab.toml")


def test_each_image_is_installed_measured_and_the_board_kept_between_images(tmp_path, monkeypatch):
    log: list[str] = []
    monkeypatch.setattr(farm.plugins, "TARGETS", Kinds(
        lambda name, options, where=None: Board(LocalTarget(name, str(options["workdir"])), log)))
    campaign = image_campaign(tmp_path, {"1.10": "good.img", "1.9": "broken.img"})
    boards = farm.image_targets(campaign)
    assert [(spec.name, options.label, options.boot_timeout_s) for spec, options in boards] == [
        ("bbb", "image", 2.0)]
    store = Store(tmp_path / "r")
    notices: list[str] = []
    try:
        done = farm.run_images(campaign, store, boards, lambda target, message: notices.append(message)).done
        runs = {r.labels["image"]: r for r in store.runs()}
    finally:
        store.close()
    assert [value for value, _, _ in done] == ["1.9", "1.10"]  # natural order
    prompt = "'login: |@@jitterlab-ready'"  # the default: a getty's prompt, or jitterlab's board root
    assert log == [f"install broken.img until {prompt} (2s)", "disconnect",
                   f"install good.img until {prompt} (2s)", "connect", "disconnect", "close"]
    assert runs["1.9"].status == "failed" and "broken.img: no 'login: '" in runs["1.9"].error
    assert "Kernel panic" in runs["1.9"].error
    assert runs["1.10"].status == "ok", runs["1.10"].error
    assert "good.img booted in 0.5 s (console prompt)" in notices


def test_a_target_that_cannot_be_flashed_is_one_line(tmp_path, monkeypatch):
    opened: list[LocalTarget] = []

    def plain(name, options, where=None):
        opened.append(LocalTarget(name, str(options["workdir"])))
        return opened[-1]

    monkeypatch.setattr(farm.plugins, "TARGETS", Kinds(plain))
    campaign = image_campaign(tmp_path, {"1.0": "a.img"})
    store = Store(tmp_path / "r")
    try:
        with pytest.raises(UserError, match=r"^target 'bbb' cannot be flashed with a system image \(.*\): "
                                            r".*ab.toml: target 'bbb' names images$"):
            farm.run_images(campaign, store, farm.image_targets(campaign), lambda target, message: None)
    finally:
        store.close()
    assert len(opened) == 1


def test_every_board_of_an_image_campaign_names_images_by_one_label(tmp_path):
    campaign = image_campaign(tmp_path, {"1.0": "a.img"})
    spec = campaign.targets[0]
    other = type(spec)(**{**spec.__dict__, "name": "b2", "options": {**spec.options, "image_label": "fw"}})
    with pytest.raises(UserError, match="name their images by different labels"):
        farm.image_targets(type(campaign)(**{**campaign.__dict__, "targets": (spec, other)}))
