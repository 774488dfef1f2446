"""Records a jitterlab keeps on a target of what it changed there, so that whatever ends it (Ctrl-C,
kill -9, a lost target) the next jitterlab on that machine puts things back.

The one mechanism under every kind of them: tracing's undo steps (tracing/changes.py), the tunings'
journal (tunings/journal.py), the RT throttling value to put back (execution/rt_throttle.py) and
what a remoteproc core ran before (targets/unit/remoteproc.py, whose record its load script writes).
Each kind keeps its own content and its own way of putting things back; here a record is a file
`<directory>/<owner>[~<key>]<suffix>`, written whole then renamed (`keep`: one command), listed
from one or more directories at once with its owner read from its name (`Kind.listed`: one
command, `ls`), and its owner, a `processes.owner_tag()`, still running or gone (`Record.alive`).
A kind's directory is under /run (emptied at boot, when the kernel forgets the changes too) and not
under /run/jitterlab, which in jitterlab's qemu guests is the boot's read-only share
(targets/qemu/init.c); where an older jitterlab kept the records (a kind's legacy directories) is
listed beside it: read and removed, never written.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jitterlab.targets.base import Completed, Target
from jitterlab.targets.processes import OWNER, owner_alive, owner_tag

# $1 the directory, $2 the record, then its lines; "--head FILE" before them puts FILE's text first
# (an empty line when it cannot be read). Written beside, then renamed: a record is whole or absent.
KEEP = r"""
dir=$1 path=$2; shift 2
mkdir -p -- "$dir" && {
  if [ "${1-}" = --head ]; then cat -- "$2" 2>/dev/null || echo; shift 2; fi
  printf '%s\n' "$@"
} > "$path.tmp" && mv -f -- "$path.tmp" "$path"
"""
# $1 a directory: its names, then "writable" when the nearest directory there is may be written
LOOK = r"""
ls -1 -- "$1" 2>/dev/null
d=$1
while [ ! -e "$d" ]; do d=${d%/*}; [ -n "$d" ] || d=/; done
[ -d "$d" ] && [ -w "$d" ] && echo writable
exit 0
"""


@dataclass(frozen=True)
class Record:
    """One record on a target: where it is, and the jitterlab process that keeps it."""

    path: str
    owner: str  # a processes.owner_tag(): host~pid~start
    key: str = ""  # what follows the owner in its name ("" for a kind without one)

    @property
    def directory(self) -> str:
        return self.path.rsplit("/", 1)[0] if "/" in self.path else ""

    @property
    def mine(self) -> bool:
        return self.owner == owner_tag()

    def alive(self) -> bool:
        """Whether its owner still runs (asked anew each time: an owner may end meanwhile)."""
        return owner_alive(self.owner)


@dataclass(frozen=True)
class Kind:
    """A kind of record: its names end in `suffix`; `key` is the pattern of what follows the owner
    and a "~" in them ("": nothing does, one record per owner)."""

    suffix: str
    key: str = ""

    def path(self, directory: str, key: str = "") -> str:
        """This jitterlab's record in `directory` (under `key`, for a kind that has one)."""
        return f"{directory}/{owner_tag()}{f'~{key}' if key else ''}{self.suffix}"

    def named(self, path: str) -> Record | None:
        """The record a path (or a bare name) is; None when it is no record of this kind."""
        key = f"~(?P<key>{self.key})" if self.key else "(?P<key>)"
        match = re.fullmatch(rf"(?P<owner>{OWNER}){key}{re.escape(self.suffix)}", path.rsplit("/", 1)[-1])
        return None if match is None else Record(path, match["owner"], match["key"])

    def listed(self, target: Target, *directories: str) -> list[Record]:
        """The records of this kind in `directories` (missing ones have none), in one command."""
        return [r for r in (self.named(p) for p in _listed(target, directories)) if r is not None]

    def looked(self, target: Target, directory: str) -> tuple[list[Record], bool]:
        """The records in `directory`, and whether one could be kept there (it, or the nearest
        directory above it that exists, may be written), in one command."""
        lines = target.run(["sh", "-c", LOOK, "sh", directory]).stdout.splitlines()
        found = [r for n in lines if (r := self.named(f"{directory}/{n}")) is not None]
        return found, "writable" in lines


def keep(target: Target, directory: str, path: str, lines: list[str], *,
         head: str | None = None) -> Completed:
    """Write the record `path` in `directory` (made when missing) whole, then rename it into place:
    its `lines`, after the text of the target's file `head` when given; one command."""
    if head is None and lines[:1] == ["--head"]:
        raise ValueError("a record's first line cannot be '--head'")
    options = ["--head", head] if head is not None else []
    return target.run(["sh", "-c", KEEP, "sh", directory, path, *options, *lines])


def lines_of(target: Target, path: str) -> list[str]:
    """A record's lines (none when it cannot be read)."""
    return target.run(["cat", path]).stdout.splitlines()


def remove(target: Target, *paths: str) -> None:
    """Remove records (those already gone are no error), in one command."""
    if paths:
        target.run(["rm", "-f", "--", *paths])


def _listed(target: Target, directories: tuple[str, ...]) -> list[str]:
    """The paths in `directories`, in the order given, from one `ls -1`: given more than one
    directory, ls heads the names of each with a line `DIRECTORY:` (GNU and busybox alike, in an
    order of their own), and says nothing of one that is missing but on stderr."""
    out = target.run(["ls", "-1", *directories]).stdout.splitlines()
    names: dict[str, list[str]] = {d: [] for d in directories}
    current = directories[0] if len(directories) == 1 else None
    for line in out:
        if len(directories) > 1 and line.endswith(":") and line[:-1] in names:
            current = line[:-1]
        elif line and current is not None:
            names[current].append(line)
    return [f"{d}/{name}" for d, found in names.items() for name in found]
