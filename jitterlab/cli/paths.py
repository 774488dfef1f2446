"""What users type on the command line as paths, names and run ids, checked as argparse types
before anything looks at a file: "File name too long" or an undecodable byte is an option error
(exit 2, naming the option), never a traceback from deep inside. An output file is checked before
any work is done for it."""

from __future__ import annotations

import argparse
import os
import re
from pathlib import Path

from jitterlab.model.errors import UserError, shown
from jitterlab.model.labels import MAX_NAME, printable

PATH_MAX = 4096  # Linux: a whole path; NAME_MAX: one component
NAME_MAX = 255
_RUN_ID = re.compile(r"^[0-9A-Fa-f]{1,32}$")


def path_arg(text: str) -> Path:
    """A file or directory the user names."""
    if not text or "\0" in text:
        raise argparse.ArgumentTypeError("give a path")
    try:
        size = len(os.fsencode(text))
    except UnicodeEncodeError:
        raise argparse.ArgumentTypeError(f"cannot use the path {shown(text)}") from None
    if size > PATH_MAX or any(len(os.fsencode(part)) > NAME_MAX for part in text.split("/")):
        raise argparse.ArgumentTypeError(
            f"path too long ({size} bytes; at most {PATH_MAX}, {NAME_MAX} per name): {shown(text)}"
        )
    return Path(text)


def name_arg(text: str) -> str:
    """A campaign name: one printable line, as campaign files allow; never blank (it would select
    no campaign, and the error would not say why)."""
    if not text.strip():
        raise argparse.ArgumentTypeError("a campaign has a name; give one that is in the store, or leave out "
                                         "--campaign")
    try:
        printable(text, MAX_NAME, "name")
    except UserError:
        raise argparse.ArgumentTypeError(
            f"a campaign name is one line of printable text of at most {MAX_NAME} characters, "
            f"got {shown(text)}"
        ) from None
    return text


def run_id_arg(text: str) -> str:
    """A run id or a prefix of one: hex digits."""
    if not _RUN_ID.match(text):
        raise argparse.ArgumentTypeError(f"a run id is hex digits like 3f9c1a (see jitterlab show), got "
                                         f"{shown(text)}")
    return text


def writable_file(path: Path, option: str, *, directory: bool = False) -> None:
    """Refuse an output that cannot be written before anything is computed for it."""
    if path.is_dir() and not directory:
        raise UserError(f"{option} {path}: is a directory; give a file name, e.g. {path / 'out'}")
    parent = path.parent if not directory or not path.is_dir() else path
    if not parent.is_dir():
        raise UserError(f"{option} {path}: the directory {parent} does not exist; create it first")
    if not os.access(parent, os.W_OK | os.X_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise UserError(f"{option} {path}: not writable here; choose another place")
