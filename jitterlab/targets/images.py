"""The [[target]] options of an image campaign, for any kind of board that can be flashed: the
image per label value, the label, the boot prompt and how long a boot may take.

    [[target]]
    name = "bbb-1"
    kind = "labgrid"
    place = "bbb-1"
    images = { "1.10" = "images/bbb-1.10.img", "1.11" = "images/bbb-1.11.img" }
    # image_label = "image"      the label whose values the images are
    # boot_prompt = "login: |@@jitterlab-ready"    a regular expression the console shows once
    #                            the image has booted (the default: a getty's prompt, or jitterlab's
    #                            board root: `jitterlab labgrid-board`)
    # boot_timeout = "300s"

A kind that accepts these keys splits them off its options here (so that campaign files are
checked before anything connects) and declares capabilities.FlashesImages; execution/farm.py
runs the campaign once per image.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from jitterlab.model.errors import UserError, shown
from jitterlab.model.labels import check_label
from jitterlab.model.units import MAX_CAMPAIGN_NS, parse_duration_ns

IMAGE_KEYS = ("images", "image_label", "boot_prompt", "boot_timeout")
MAX_PROMPT = 200  # characters of boot_prompt
# a getty's login prompt (a lab's image), or what jitterlab's board root says once its sshd listens
BOOT_PROMPT = "login: |@@jitterlab-ready"


@dataclass(frozen=True)
class ImageOptions:
    images: tuple[tuple[str, str], ...]  # label value -> image file
    label: str = "image"
    boot_prompt: str = BOOT_PROMPT
    boot_timeout_s: float = 300.0

    def image(self, value: str) -> str | None:
        return dict(self.images).get(value)


def split_image_options(options: Mapping[str, object], where: str) -> tuple[dict, ImageOptions | None]:
    """The target's other options, and its image options (None when it names no images)."""
    rest = {k: v for k, v in options.items() if k not in IMAGE_KEYS}
    if "images" not in options:
        extra = [k for k in IMAGE_KEYS if k in options]
        if extra:
            raise UserError(f"{where}.{extra[0]}: goes with images = {{ \"1.10\" = \"a.img\", ... }}")
        return rest, None
    images = options["images"]
    if not isinstance(images, dict) or not images:
        raise UserError(f'{where}.images: expected a table of label value = image file, e.g. images = '
                        f'{{ "1.10" = "bbb-1.10.img" }}, got {shown(images)}')
    label = options.get("image_label", "image")
    if not isinstance(label, str) or not re.fullmatch(r"[A-Za-z0-9_.-]{1,100}", label):
        raise UserError(f'{where}.image_label: expected a label key like "image", got {shown(label)}')
    pairs = []
    for value, path in images.items():
        # each key becomes the runs' label value, which compare selects by: a label's rules hold
        check_label(label, str(value), f"{where}.images (a value of the label {label!r})")
        if not isinstance(path, str) or not path:
            raise UserError(f"{where}.images.{value}: expected the path of an image file, got {shown(path)}")
        full = os.path.abspath(os.path.expanduser(path))
        if not os.path.isfile(full):
            raise UserError(f"{where}.images.{value}: {full} does not exist (a relative path starts at "
                            f"{os.getcwd()})")
        pairs.append((str(value), full))
    prompt = options.get("boot_prompt", BOOT_PROMPT)
    timeout_ns = parse_duration_ns(options.get("boot_timeout", "300s"), f"{where}.boot_timeout",
                                   MAX_CAMPAIGN_NS)
    return rest, ImageOptions(tuple(pairs), label, _boot_prompt(prompt, where), timeout_ns / 1e9)


def _boot_prompt(prompt: object, where: str) -> str:
    """A regular expression the console shows once booted; one that matches nothing ("", "x*") would
    not wait for the boot at all."""
    example = 'e.g. boot_prompt = "login: "'
    if not isinstance(prompt, str) or len(prompt) > MAX_PROMPT:
        raise UserError(f"{where}.boot_prompt: expected a regular expression of at most {MAX_PROMPT} "
                        f"characters, {example}; got {shown(prompt)}")
    try:
        pattern = re.compile(prompt)
    except re.error as exc:
        raise UserError(f"{where}.boot_prompt: not a regular expression ({exc}), {example}") from None
    if pattern.search(""):
        raise UserError(f"{where}.boot_prompt: {shown(prompt)} matches empty text, so the boot would not "
                        f"be waited for; give what the console shows once booted, {example}")
    return prompt


def check_labels_free(options: ImageOptions, labels: Mapping[str, str], where: str) -> None:
    """The image label is set per image: the campaign's labels (or --label) must not set it too."""
    if options.label in labels:
        raise UserError(f"{where}: the label {options.label!r} is set per image (images = {{ ... }}), and "
                        f"also to {shown(labels[options.label])} in [campaign.labels] or --label; "
                        "remove one, or name the images by another image_label")
