"""A trace file's events read from `trace-cmd report -R -t` (raw fields, nanosecond times): the same
arrays as reader.py without building anything, for small windows. Slower and bigger on the way
(the whole text passes through Python): bench/trace_read.py measures both.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from jitterlab.model.errors import UserError
from jitterlab.model.trace import EVENT_DTYPE, Kind, TraceEvents
from jitterlab.tracing.datfile import run_trace_cmd, trace_cmd
from jitterlab.tracing.reader import marked

_LINE = re.compile(r"^\s*(?P<comm>.*)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+(?P<s>\d+)\.(?P<ns>\d{9}):\s+"
                   r"(?P<event>\w+):\s*(?P<rest>.*)$")
_LOST = re.compile(r"^\s*CPU:\s*(?P<cpu>\d+)\s+\[(?:LOST (?P<n>\d+) EVENTS|EVENTS DROPPED)\]")
_FIELD = re.compile(r"(\w+)=(.*?)(?= \w+=|$)")
_EVENTS = {  # event -> kind and {column: field}; names end in "name"
    "sched_switch": (Kind.SWITCH, {"pid": "next_pid", "prio": "next_prio", "name": "next_comm",
                                   "prev_pid": "prev_pid", "prev_prio": "prev_prio", "prev_name": "prev_comm",
                                   "number": "prev_state"}),
    "sched_waking": (Kind.WAKING, {"pid": "pid", "prio": "prio", "name": "comm", "number": "target_cpu"}),
    "sched_wakeup": (Kind.WAKEUP, {"pid": "pid", "prio": "prio", "name": "comm", "number": "target_cpu"}),
    "sched_migrate_task": (Kind.MIGRATE, {"pid": "pid", "prio": "prio", "name": "comm", "number": "dest_cpu",
                                          "number2": "orig_cpu"}),
    "irq_handler_entry": (Kind.IRQ_ENTRY, {"number": "irq", "name": "name"}),
    "irq_handler_exit": (Kind.IRQ_EXIT, {"number": "irq", "number2": "ret"}),
    "softirq_entry": (Kind.SOFTIRQ_ENTRY, {"number": "vec"}),
    "softirq_exit": (Kind.SOFTIRQ_EXIT, {"number": "vec"}),
    "hrtimer_start": (Kind.HRTIMER_START, {"timer": "hrtimer", "expires_ns": "expires",
                                           "soft_ns": "softexpires"}),
    "hrtimer_expire_entry": (Kind.HRTIMER_EXPIRE_ENTRY, {"timer": "hrtimer", "expires_ns": "now"}),
    "hrtimer_expire_exit": (Kind.HRTIMER_EXPIRE_EXIT, {"timer": "hrtimer"}),
    "gpio_value": (Kind.GPIO_VALUE, {"number": "gpio", "number2": "value"}),
    "print": (Kind.MARK, {"name": "buf"}),
    "tracing_mark_write": (Kind.MARK, {"name": "buf"}),
}


def read_report(dat: Path) -> TraceEvents:
    """Every event of `dat` that jitterlab reads, from trace-cmd report's text; UserError naming the
    file when trace-cmd cannot read it."""
    done = run_trace_cmd([trace_cmd(), "report", "-R", "-t", str(dat)])
    if done.returncode != 0 or not done.stdout.startswith("cpus="):  # a damaged file may read as nothing
        why = (done.stderr.strip().splitlines() or [f"exit status {done.returncode}, nothing read"])[-1]
        raise UserError(f"{dat}: trace-cmd report cannot read this trace file ({why})")
    return parse_report(done.stdout)


def parse_report(text: str) -> TraceEvents:
    """The events of `trace-cmd report -R -t` output."""
    names: dict[str, int] = {"": 0}
    rows: list[tuple] = []
    slot = {name: i for i, name in enumerate(EVENT_DTYPE.names)}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            lost = _LOST.match(line)
            if lost:  # its time: the next event's of that CPU (below)
                row = [0] * len(slot)
                row[slot["cpu"]], row[slot["kind"]] = int(lost["cpu"]), Kind.LOST
                row[slot["number"]] = int(lost["n"]) if lost["n"] else -1
                rows.append(tuple(row))
            continue
        known = _EVENTS.get(match["event"])
        if known is None:
            continue
        kind, columns = known
        fields = dict(_FIELD.findall(match["rest"]))
        row = [0] * len(slot)
        row[slot["time_ns"]] = int(match["s"]) * 1_000_000_000 + int(match["ns"])
        row[slot["cpu"]], row[slot["kind"]] = int(match["cpu"]), kind
        row[slot["prev_pid"]] = int(match["pid"])
        for column, name in columns.items():
            value = fields.get(name, "")
            if column.endswith("name"):
                row[slot[column]] = names.setdefault(value, len(names))
            elif value:
                row[slot[column]] = _number(value)
        rows.append(tuple(row))
    array = np.array(rows, dtype=EVENT_DTYPE) if rows else np.zeros(0, EVENT_DTYPE)
    for i in np.flatnonzero(array["kind"] == Kind.LOST):  # a loss is dated by what follows it
        later = np.flatnonzero((array["cpu"] == array["cpu"][i]) & (np.arange(len(array)) > i))
        dated = array["time_ns"][later[0]] if len(later) else array["time_ns"][:i].max(initial=0)
        array["time_ns"][i] = dated
    return marked(TraceEvents(array, tuple(sorted(names, key=names.__getitem__))))


def _number(text: str) -> int:
    value = int(text, 16) if text.startswith("0x") else int(text)
    return value - (1 << 64) if value >= 1 << 63 else value
