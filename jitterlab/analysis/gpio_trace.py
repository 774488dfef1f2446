"""An emulated GPIO controller's output levels, as the emulator traces them, turned into the edges
of one output line.

qemu's PL061 (the `virt` machine's GPIO controller) has the trace event `pl061_set_output`; with
qemu's log trace backend and `-msg timestamp=on` each event is one line of the `-D` file:

    11153@1795579684.409894:pl061_set_output /machine/unattached/device[7] setting output 2 to 1

the id of the qemu thread that wrote it, '@', the host's CLOCK_REALTIME as seconds '.'
microseconds (gettimeofday, always six digits: the resolution is 1 us), ':', the event, the
device's QOM path, then the line and its new level. The controller traces a line only when its
level changed, except at a reset, where it reports every line it drives whatever its level. So:

- an event that repeats the line's current level is no edge (a reset's report);
- the level before the first edge is the one given, else the opposite of the first event's (the
  first event of a window after the boot is a change);
- lines of other events, of other output lines and anything else qemu logs are skipped, and so is
  an event without a time stamp (counted in `untimed`: qemu ran without `-msg timestamp=on`);
- only whole lines count: a last line without its newline is still being written, and `consumed`
  says where the next read starts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

# what each known event writes after the device's path: the line and its new level
MESSAGES: dict[str, bytes] = {"pl061_set_output": rb"setting output (\d+) to ([01])"}
RESOLUTION_NS = 1_000  # the time stamps' microseconds


@dataclass(frozen=True)
class TraceEdges:
    """The level changes of one output line; t_ns on the emulator host's CLOCK_REALTIME."""

    t_ns: np.ndarray  # int64
    level: np.ndarray  # uint8, the level after each edge
    initial_level: int | None  # before the first edge; None when the window holds no event of the line
    devices: tuple[str, ...]  # the controllers (QOM paths) that traced the line, in order of appearance
    untimed: int  # events of the line without a time stamp (skipped)
    consumed: int  # bytes of whole lines read: the next read starts here


def known_event(event: str) -> bool:
    return event in MESSAGES


def parse_trace(data: bytes | str, event: str, line: int, initial_level: int | None = None) -> TraceEdges:
    """The edges of output `line` in trace text `data` (see the module doc); ValueError for an event
    whose message format is not known."""
    if event not in MESSAGES:
        raise ValueError(f"no reader for trace event {event!r} (known: {', '.join(sorted(MESSAGES))})")
    raw = data.encode() if isinstance(data, str) else data
    consumed = raw.rfind(b"\n") + 1
    whole = raw[:consumed]
    name, message = re.escape(event.encode()), MESSAGES[event]
    timed = re.compile(rb"^\d+@(\d+)\.(\d{6}):" + name + rb" (\S+) " + message + rb"[ \t\r]*$", re.M)
    untimed = re.compile(rb"^" + name + rb" \S+ " + message + rb"[ \t\r]*$", re.M)
    wanted = str(line).encode()
    found = [m for m in timed.findall(whole) if m[3] == wanted]
    n_untimed = sum(1 for m in untimed.findall(whole) if m[0] == wanted)
    devices = tuple(dict.fromkeys(m[2].decode(errors="replace") for m in found))
    if not found:
        empty = np.empty(0, np.int64)
        return TraceEdges(empty, empty.astype(np.uint8), initial_level, devices, n_untimed, consumed)
    seconds = np.array([int(m[0]) for m in found], dtype=np.int64)
    micros = np.array([int(m[1]) for m in found], dtype=np.int64)
    t_ns = seconds * 1_000_000_000 + micros * RESOLUTION_NS
    levels = np.array([m[4] == b"1" for m in found], dtype=np.uint8)
    start = int(1 - levels[0]) if initial_level is None else int(initial_level)
    before = np.concatenate(([start], levels[:-1])).astype(np.uint8)
    change = levels != before
    return TraceEdges(t_ns[change], levels[change], start, devices, n_untimed, consumed)
