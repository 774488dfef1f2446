"""Kernel files read and written on a target exactly as they are, many in one round trip.

A tuning reads what it will change (the text of each file, byte for byte, and whether this user may
write it) and writes its values, each read back at once, so that what it records is what the kernel
holds, and what the kernel refused is named with its own words. The scripts are constant; paths and
values reach them as positional parameters. Each file comes back framed by ASCII separators that no
kernel file of these holds (RS before the path, US after the path and after the state), so its
text keeps its trailing newline.
"""

from __future__ import annotations

from dataclasses import dataclass

from jitterlab.targets.base import Target

_RS, _US, _UNREADABLE = "\036", "\037", "\035"
# each argument a path; "--under BASE NAME": every BASE/*/NAME there is (the IRQs, the CPUs);
# "--in DIR": every file in DIR
_READ = r"""
show() {
  printf '\036%s\037' "$1"
  if [ ! -e "$1" ]; then printf -- '-\037'; return; fi
  if [ -w "$1" ]; then printf 'w\037'; else printf 'r\037'; fi
  cat -- "$1" 2>/dev/null || printf '\035'
}
while [ $# -gt 0 ]; do
  case $1 in
    --under) for f in "$2"/*/"$3"; do [ -e "$f" ] && show "$f"; done; shift 3 ;;
    --in) for f in "$2"/*; do [ -f "$f" ] && show "$f"; done; shift 2 ;;
    *) show "$1"; shift ;;
  esac
done
exit 0
"""
# pairs PATH VALUE: each value in one write (tee reports the kernel's errno, dash's printf does not),
# then the file read back; or the kernel's words when it refused
_WRITE = r"""
while [ $# -ge 2 ]; do
  f=$1 v=$2; shift 2
  printf '\036%s\037' "$f"
  if err=$(printf '%s' "$v" | tee -- "$f" 2>&1 >/dev/null); then
    printf 'ok\037'; cat -- "$f" 2>/dev/null || printf '\035'
  else
    printf 'refused\037%s' "$err"
  fi
done
exit 0
"""


@dataclass(frozen=True)
class FileText:
    """A file as read: its text (None: absent or unreadable: a directory), whether this user may
    write it, and whether it is there at all."""

    path: str
    text: str | None
    writable: bool = False
    exists: bool = False


@dataclass(frozen=True)
class Written:
    """One write: the text read back (None when refused or unreadable) or the kernel's refusal."""

    path: str
    after: str | None
    refused: str = ""


def read(target: Target, paths: list[str], *, under: tuple[str, str] | None = None,
         within: str | None = None) -> dict[str, FileText]:
    """Each file's text and writability, and those of every `under` = (base, name): base/*/name
    (the IRQs' smp_affinity_list) and of every file `within` a directory, in one round trip."""
    argv = ["sh", "-c", _READ, "sh", *paths]
    if under is not None:
        argv += ["--under", *under]
    if within is not None:
        argv += ["--in", within]
    found = _parse_read(target.run(argv).stdout)
    return {path: FileText(path, None) for path in paths} | found  # unanswered: not there


def write(target: Target, values: list[tuple[str, str]]) -> dict[str, Written]:
    """Write each (path, text) in order, as one line (`echo text > path`), and read it back, in one
    round trip."""
    if not values:
        return {}
    lines = [(path, text if text.endswith("\n") else f"{text}\n") for path, text in values]
    argv = ["sh", "-c", _WRITE, "sh", *(part for pair in lines for part in pair)]
    out = {}
    for path, state, rest in _frames(target.run(argv).stdout):
        if state == "ok":
            text = None if rest.endswith(_UNREADABLE) else rest
            out[path] = Written(path, text)
        else:
            why = rest.strip().rsplit(": ", 1)[-1] if rest.strip() else "refused"
            out[path] = Written(path, None, why)
    return {path: Written(path, None, "no answer") for path, _ in values} | out


def _parse_read(stdout: str) -> dict[str, FileText]:
    out = {}
    for path, state, rest in _frames(stdout):
        text = None if state == "-" or rest.endswith(_UNREADABLE) else rest
        out[path] = FileText(path, text, state == "w", state != "-")
    return out


def _frames(stdout: str) -> list[tuple[str, str, str]]:
    frames = []
    for frame in stdout.split(_RS)[1:]:
        path, _, rest = frame.partition(_US)
        state, _, text = rest.partition(_US)
        frames.append((path, state, text))
    return frames
