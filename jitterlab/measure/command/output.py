"""What a `command` run keeps of its program's output (and of a file the program wrote), and how a
metric is read from it.

A program may print without bound (400 MB of progress lines): what is brought over from the target
and held is at most HEAD_BYTES + TAIL_BYTES, cut on the target itself. Metrics are read from the
last TAIL_BYTES then (the LAST match, the last line of JSON: what counts is at the end); a failed
run keeps the first HEAD_BYTES and the last TAIL_BYTES with a line saying how much is left out
between them, and its reason says the output was cut.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import math
import re
from dataclasses import dataclass
from pathlib import Path

from jitterlab.measure.context import RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Warning_
from jitterlab.targets.base import CommandTimeout
from jitterlab.targets.processes import spawn_recorded

HEAD_BYTES = 1 << 20  # 1 MiB: how the program started, for people
TAIL_BYTES = 7 << 20  # 7 MiB: the summary the metrics are read from
_PATH_STEP = re.compile(r'\.([A-Za-z_][A-Za-z0-9_-]*)|\[(\d+)\]|\["([^"\\]*)"\]')
# Constant: the file, the bound and the sizes kept reach it as positional parameters. It prints the
# file's size ("missing" when it is no regular file) and, past the bound, leaves its two ends beside it.
_MEASURE = ('[ -f "$1" ] || { echo missing; exit 0; }; n=$(wc -c < "$1") || exit 1; echo $n; '
            '[ "$n" -le "$2" ] || { head -c "$3" "$1" > "$1.head-kept" &&\n'
            'tail -c "$4" "$1" > "$1.tail-kept"; }')


def _size(n: int) -> str:
    if n < 1 << 20:
        return f"{n} bytes"
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n / (1 << 20):.1f} MiB"


@dataclass(frozen=True)
class Output:
    """What is kept of an output of `total` bytes: all of it in `head` (tail b"") when it fits,
    else its first and its last bytes."""

    head: bytes
    tail: bytes = b""
    total: int = 0

    @property
    def left_out(self) -> int:
        return self.total - len(self.head) - len(self.tail) if self.tail else 0

    def kept(self) -> bytes:
        """The bytes to attach to a failed run, with a line where some are left out."""
        if not self.left_out:
            return self.head + self.tail
        return self.head + f"\n[... {self.left_out} bytes left out here ...]\n".encode() + self.tail

    def text(self) -> str:
        """What metrics are read from: all of it, or the tail from its first whole line on."""
        if not self.left_out:
            return (self.head + self.tail).decode(errors="replace")
        return self.tail[self.tail.find(b"\n") + 1:].decode(errors="replace")

    def source(self, what: str) -> str:
        if not self.left_out:
            return what
        return f"the last {_size(TAIL_BYTES)} of {what} ({_size(self.total)} in all)"

    def warning(self, what: str) -> Warning_:
        """For a run measured from a cut output: where its metrics came from."""
        return Warning_(f"the program printed {_size(self.total)}; its metrics were read from "
                        f"{self.source(what)}", "print less (progress lines), or write the numbers to a "
                        "file and read them with `file`")

    def note(self, name: str) -> str:
        """For a failed run's reason: how the attachment `name` was cut ("" when it was not)."""
        if not self.left_out:
            return ""
        return (f" ({name} keeps the first {_size(HEAD_BYTES)} and the last {_size(TAIL_BYTES)} of "
                f"{_size(self.total)}; {self.left_out} bytes left out)")


def read_output(ctx: RunContext, name: str) -> Output:
    """The file `name` of the run's working directory as Output (empty when there is none)."""
    path = f"{ctx.scratch}/{name}"
    done = ctx.target.run(["sh", "-c", _MEASURE, "sh", path, str(HEAD_BYTES + TAIL_BYTES), str(HEAD_BYTES),
                           str(TAIL_BYTES)])
    size = done.stdout.strip()
    if not done.ok or not size.isdigit():
        return Output(b"")
    total = int(size)
    if total <= HEAD_BYTES + TAIL_BYTES:
        return Output(_fetch(ctx, name, HEAD_BYTES + TAIL_BYTES), total=total)
    return Output(_fetch(ctx, f"{name}.head-kept", HEAD_BYTES), _fetch(ctx, f"{name}.tail-kept", TAIL_BYTES),
                  total)


def _fetch(ctx: RunContext, name: str, limit: int) -> bytes:
    """At most `limit` bytes of a file of the working directory (b"" when there is none)."""
    local = ctx.local_dir / name
    try:
        ctx.target.get(f"{ctx.scratch}/{name}", local)
        with open(local, "rb") as f:
            return f.read(limit)
    except OSError:
        return b""
    finally:
        with contextlib.suppress(OSError):
            Path(local).unlink()


def run_program(ctx: RunContext, argv: list[str], name: str, log_name: str, *, timeout_s: float,
                budget: str) -> tuple[int, Output]:
    """Run `argv` (recorded, so a killed run's program is swept) to its end with stdout+stderr in
    `<scratch>/<log_name>`; return its exit status and what is kept of its output. A program
    still running after `timeout_s` is stopped and the run fails as "timeout", saying what the
    time was made of (`budget`), with what is kept of its output."""
    try:
        proc = spawn_recorded(ctx.target, argv, log_path=f"{ctx.scratch}/{log_name}")
    except OSError as exc:  # E2BIG and the like, from this machine's exec
        raise RunFailed(f"{name} could not start: {exc.strerror or exc}") from None
    try:
        rc = proc.wait(timeout_s)
    except CommandTimeout:
        proc.stop()
        output = read_output(ctx, log_name)
        raise RunFailed(f"{name} still running {timeout_s:.0f}s after start ({budget}); killed"
                        + output.note(log_name), status="timeout",
                        attachments={log_name: output.kept()}) from None
    finally:
        with contextlib.suppress(Exception):
            proc.stop()
    return rc, read_output(ctx, log_name)


# --- metrics -----------------------------------------------------------------------------------


def json_path_steps(path: str, where: str) -> list[str | int]:
    """`$.a.b[0]["c d"]` -> ["a", "b", 0, "c d"]; UserError naming the key otherwise."""
    if not path.startswith("$"):
        raise UserError(f'{where}: a JSON path starts with $, e.g. "$.fps" or "$.results[0].fps"; '
                        f"got {path!r}")
    steps: list[str | int] = []
    pos = 1
    while pos < len(path):
        match = _PATH_STEP.match(path, pos)
        if match is None:
            raise UserError(f"{where}: cannot read {path!r} from {path[pos:]!r} on; "
                            'write steps like .key, [0] or ["odd key"]')
        key, index, quoted = match.groups()
        steps.append(int(index) if index is not None else key if key is not None else quoted)
        pos = match.end()
    return steps


def read_metric(spec: dict[str, str], text: str, source: str) -> float:
    """One metric's number from `text` (the output or the named file); RunFailed saying why not."""
    name = spec["name"]
    if "regex" in spec:
        last = None
        for last in re.finditer(spec["regex"], text, re.MULTILINE):  # noqa: B007 - the last one counts
            pass
        if last is None:
            raise RunFailed(f"metric {name}: regex {spec['regex']!r} matched nothing in {source}")
        found = last.group(1)
        try:
            value = float(found)
        except (TypeError, ValueError):
            raise RunFailed(f"metric {name}: regex {spec['regex']!r} found {found[:80]!r} in {source}, "
                            "not a number") from None
    else:
        value = _at_path(_json_of(text, name, source), spec["json_path"], name, source)
    if not math.isfinite(value):
        raise RunFailed(f"metric {name}: {value} in {source} is not a finite number")
    return value


def _json_of(text: str, name: str, source: str) -> object:
    deep = False
    lines = (line for line in reversed(text.splitlines()) if line.strip()[:1] in ("{", "["))
    for candidate in itertools.chain([text], lines):
        try:
            return json.loads(candidate)
        except ValueError:
            continue
        except RecursionError:  # '[' * 200000: Python's parser recurses once per level
            deep = True
    skipped = " (JSON nested too deeply to read is skipped)" if deep else ""
    raise RunFailed(f"metric {name}: {source} is not JSON and has no line of JSON{skipped}")


def _at_path(data: object, path: str, name: str, source: str) -> float:
    node = data
    for step in json_path_steps(path, "json_path"):
        try:
            node = node[step]  # type: ignore[index]
        except (KeyError, IndexError, TypeError):
            raise RunFailed(f"metric {name}: {source} has nothing at {path} (no {step!r})") from None
    if isinstance(node, bool) or not isinstance(node, int | float):
        try:
            shown = json.dumps(node)[:80]
        except RecursionError:
            shown = "a deeply nested value"
        raise RunFailed(f"metric {name}: {path} in {source} is {shown}, not a number")
    return float(node)
