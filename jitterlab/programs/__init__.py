"""Sources that run on targets; SOURCES is where they are, DIRS the directories that travel to a
target with how each is built (declared by the plug-ins that use them)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError, shown

SOURCES = Path(__file__).parent
_CC_WORD = re.compile(r"^[A-Za-z0-9_./+=,:-]+$")


@dataclass(frozen=True)
class ProgramDir:
    """A directory of SOURCES that is deployed to targets.

    `ships` are glob patterns of the files that travel (sources, never build output). When `built`,
    deployment runs `make -k` in it (on the target, or here with the target's cross compiler, static)
    and its executables are the programs consumers name in `programs()`; otherwise it travels as it
    is (scripts, or sources a plug-in builds itself, like a kernel module per kernel release).
    """

    name: str
    ships: tuple[str, ...]
    built: bool = False

    @property
    def path(self) -> Path:
        return SOURCES / self.name


DIRS: dict[str, ProgramDir] = {}


def declare(directory: ProgramDir) -> ProgramDir:
    """Make `directory` part of what is deployed; declaring the same one twice is harmless, two
    different declarations of one name are a bug (ValueError)."""
    if not directory.path.is_dir():
        raise ValueError(f"program directory {directory.name!r}: {directory.path} does not exist")
    known = DIRS.setdefault(directory.name, directory)
    if known != directory:
        raise ValueError(f"program directory {directory.name!r} declared twice, differently")
    return directory


# the C programs: impls (c-file, c-mmap, ...), probes (observer, gpio-watch) and benchmarks
# (udp-echo, pps, switch) share one Makefile
C = declare(ProgramDir("c", ("*.c", "*.h", "Makefile"), built=True))


def check_cc(cc: object, where: str) -> str:
    """A C compiler, maybe with flags ("aarch64-linux-gnu-gcc -mcpu=cortex-a53"): words of
    letters, digits and _./+=,:- only, the first not a flag. make hands $(CC) to /bin/sh, so a
    quote, $, `, ;, | or & in it would run a command on this machine."""
    words = cc.split() if isinstance(cc, str) else []
    if not words or len(cc) > 500 or not all(_CC_WORD.match(w) for w in words) or words[0][0] == "-":
        raise UserError(
            f'{where}: expected a compiler and its flags, e.g. cc = "aarch64-linux-gnu-gcc -O2", '
            f"as words of letters, digits and _./+=,:- (no quotes, $, `, ;, |, &, spaces inside a word), "
            f"got {shown(cc)}"
        )
    return " ".join(words)
