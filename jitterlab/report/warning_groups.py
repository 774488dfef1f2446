"""Warnings grouped by cause: once each, with how many runs or cells it concerns and its remedy,
the system-level ones (the target, the campaign) first. A cause is the message with its numbers
taken out, and the remedy; the numbers of a group are shown as their range ("blind 1.2–8.4 %")."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, Literal

from jitterlab.model.records import Warning_

_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
Scope = Literal["run", "cell", "system"]  # also the noun people read: "3 cells", "12 runs"
RUN: Final = "run"
CELL: Final = "cell"
SYSTEM: Final = "system"


@dataclass(frozen=True)
class Note:
    """One warning as something reported it: `scope` is SYSTEM (a target or the campaign), RUN
    (`where` is a run id) or CELL (`where` names the cell)."""

    scope: Scope
    where: str
    warning: Warning_


@dataclass
class Group:
    message: str
    remedy: str
    scope: Scope
    where: list[str] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.where)

    @property
    def affected(self) -> str:
        """"12 runs", "3 cells", "target local" / "campaign quickstart" for system-level ones."""
        if self.scope == SYSTEM:
            return ", ".join(self.where)
        noun = self.scope if self.count == 1 else f"{self.scope}s"
        return f"{self.count} {noun}"

    @property
    def examples(self) -> str:
        """The first few places, for looking one up (`jitterlab show RUN_ID`)."""
        if self.scope == SYSTEM:
            return ""
        more = f" and {self.count - 3} more" if self.count > 3 else ""
        return ", ".join(self.where[:3]) + more


def _cause(w: Warning_) -> tuple[str, str]:
    return _NUMBER.sub("#", w.message), w.remedy


def _merged(messages: list[str]) -> str:
    """One message for a group: the numbers that differ become their range."""
    first = messages[0]
    numbers = [_NUMBER.findall(m) for m in messages]
    if len({len(n) for n in numbers}) != 1:
        return first
    parts, out = _NUMBER.split(first), []
    for i, text in enumerate(parts):
        out.append(text)
        if i < len(numbers[0]):
            seen = [n[i] for n in numbers]
            values = sorted(set(seen), key=lambda s: float(s.replace(",", "")))
            out.append(values[0] if len(values) == 1 else f"{values[0]}–{values[-1]}")
    return "".join(out)


def grouped(notes: Iterable[Note]) -> list[Group]:
    """Groups by cause: system-level first, then by how many runs or cells each concerns."""
    groups: dict[tuple, Group] = {}
    messages: dict[tuple, list[str]] = {}
    for n in notes:
        key = (n.scope, *_cause(n.warning))
        group = groups.setdefault(key, Group(n.warning.message, n.warning.remedy, n.scope))
        if n.where not in group.where:
            group.where.append(n.where)
            messages.setdefault(key, []).append(n.warning.message)
    for key, group in groups.items():
        group.message = _merged(messages[key])
    order = {SYSTEM: 0, CELL: 1, RUN: 1}
    return sorted(groups.values(), key=lambda g: (order[g.scope], -g.count))
