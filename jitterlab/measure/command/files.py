"""The files a `command` cell ships into its run's working directory: what may be shipped, checked
when the campaign is read and again before each copy, and the copy itself.

Only regular files and directories are shipped: a device (/dev/zero), FIFO or socket would copy
forever or block, a symbolic link inside a shipped directory could lead anywhere (back up to a
parent: an endless copy), and anything under /proc, /sys or /dev is the kernel's, not a file of
the user's. Each item lands as <scratch>/<its last name>, so the last name must be a name: not
"", "." or "..", which would land in or above the working directory. All items together are at
most MAX_FILES_ENTRIES files and directories and MAX_FILES_BYTES bytes: every run copies them.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from jitterlab.measure.context import RunContext
from jitterlab.model.errors import RunFailed, UserError, shown
from jitterlab.targets.capabilities import ControllerMachine, has

# what every run copies: a larger tree belongs in the target's image, not in each run's directory
MAX_FILES_BYTES = 1 << 30  # 1 GiB
MAX_FILES_ENTRIES = 10_000  # files and directories
KERNEL_TREES = ("/proc", "/sys", "/dev")
_KINDS = (
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISSOCK, "a socket"),
)
_FIX = "ship only regular files and directories"


def _quoted(path: object) -> str:
    """A path for a message: as it is when printable, else quoted with control characters escaped;
    cut only when absurdly long."""
    text = str(path)
    plain = text and text.isprintable() and text.strip() == text and len(text) <= 400
    return text if plain else shown(text, 400)


class _Refused(Exception):
    """Why an item cannot be shipped (said the same way when read and at run time)."""


def check_files(items: list[str], reserved: tuple[str, ...], where: str) -> None:
    """UserError naming `where` when the items cannot be shipped (see the module's docstring);
    `reserved` are names the working directory already uses."""
    try:
        _check(items, reserved)
    except _Refused as exc:
        raise UserError(f"{where}: {exc}") from None


def ship_files(ctx: RunContext, items: list[str]) -> None:
    """Copy the items into the run's working directory, checked again first (a file may have
    changed since the campaign was read); RunFailed says why not. Whatever a failed copy left
    is in the working directory, which the runner removes with the run."""
    try:
        _check(items, ())
        if has(ctx.target, ControllerMachine) is not None:  # the target's files are this machine's
            _not_around(items, Path(ctx.scratch))
    except _Refused as exc:
        raise RunFailed(f"files: {exc}") from None
    for item in items:
        path = Path(item)
        try:
            ctx.target.put(path, f"{ctx.scratch}/{path.name}")
            if path.is_file() and os.access(path, os.X_OK):  # not every put keeps the mode
                ctx.target.run(["chmod", "+x", f"{ctx.scratch}/{path.name}"])
        except OSError as exc:  # shutil.Error too: a full disk, a file gone meanwhile
            why = exc.strerror or (str(exc).splitlines() or [type(exc).__name__])[0][:200]
            raise RunFailed(f"files: could not copy {_quoted(item)} to the working directory: {why}") \
                from None


def _check(items: list[str], reserved: tuple[str, ...]) -> None:
    names: set[str] = set()
    budget = _Budget()
    for item in items:
        if not item:
            raise _Refused("an empty path; name a file or directory, e.g. \"examples/fps.py\"")
        name = Path(item).name
        if name in ("", ".", ".."):
            if Path(item).resolve() == Path("/"):
                raise _Refused("'/' is the root directory; name the files the program needs")
            raise _Refused(f"{shown(item, 400)} does not end in a file or directory name; name the "
                           'directory itself, e.g. "../data" rather than ".." (it is copied under its '
                           "last name)")
        if name in names or name in reserved:
            raise _Refused(f"two files are named {name!r} in the working directory; rename one")
        names.add(name)
        _check_item(item, budget)


class _Budget:
    def __init__(self) -> None:
        self.entries = 0
        self.bytes = 0

    def add(self, label: str, size: int) -> None:
        self.entries += 1
        self.bytes += size
        if self.entries > MAX_FILES_ENTRIES:
            raise _Refused(f"more than {MAX_FILES_ENTRIES} files and directories to copy (at {label}); "
                           "every run copies them: ship an archive and unpack it in the build step")
        if self.bytes > MAX_FILES_BYTES:
            raise _Refused(f"more than {MAX_FILES_BYTES} bytes to copy (at {label}); every run copies "
                           "them: put large data on the target beforehand and pass its path")


def _check_item(item: str, budget: _Budget) -> None:
    """The named item may be a symbolic link (it is followed); what is in a directory may not."""
    try:
        resolved = Path(item).resolve(strict=True)
        info = resolved.stat()
    except FileNotFoundError:
        raise _Refused(f"{_quoted(item)} does not exist (a relative path starts at {Path.cwd()})") from None
    except (OSError, RuntimeError) as exc:  # a symlink loop, a denied directory on the way
        raise _Refused(f"cannot read {_quoted(item)}: {getattr(exc, 'strerror', None) or exc}") from None
    if resolved == Path("/"):
        raise _Refused("'/' is the root directory; name the files the program needs")
    _check_entry(_quoted(item), resolved, info, budget)
    for tree in KERNEL_TREES:
        if resolved.is_relative_to(tree):
            raise _Refused(f"{_quoted(item)} is under {tree}, the kernel's, not a file to copy; {_FIX}")
    if stat.S_ISDIR(info.st_mode):
        _walk(resolved, budget)


def _check_entry(label: str, path: Path, info: os.stat_result, budget: _Budget) -> None:
    if stat.S_ISLNK(info.st_mode):
        raise _Refused(f"{label} is a symbolic link inside a shipped directory, which is not followed; "
                       "replace it by what it points to, or ship that as an item of its own")
    for test, kind in _KINDS:
        if test(info.st_mode):
            raise _Refused(f"{label} is {kind}; {_FIX}")
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise _Refused(f"{label} is neither a regular file nor a directory; {_FIX}")
    access = os.R_OK | (os.X_OK if stat.S_ISDIR(info.st_mode) else 0)
    if not os.access(path, access, follow_symlinks=False):
        raise _Refused(f"cannot read {label}: permission denied")
    budget.add(label, info.st_size if stat.S_ISREG(info.st_mode) else 0)


def _walk(top: Path, budget: _Budget) -> None:
    """Every entry below `top`, without following links, stopping at the first bound passed."""
    pending = [top]
    while pending:
        directory = pending.pop()
        try:
            with os.scandir(directory) as entries:
                for entry in entries:
                    _check_entry(_quoted(entry.path), Path(entry.path), entry.stat(follow_symlinks=False),
                                 budget)
                    if entry.is_dir(follow_symlinks=False):
                        pending.append(Path(entry.path))
        except OSError as exc:
            raise _Refused(f"cannot read {directory}: {exc.strerror or exc}") from None


def _not_around(items: list[str], scratch: Path) -> None:
    """On this machine, a shipped directory holding the working directory would copy into itself."""
    here = scratch.resolve()
    for item in items:
        if here.is_relative_to(Path(item).resolve()):
            raise _Refused(f"{_quoted(item)} holds the run's working directory ({here}), so it would be "
                           "copied into itself; ship a directory beside it, or move the target's workdir")
