"""irq-away: the machine's interrupts kept off the program's and the probe's CPUs for a cell.

The field's usual way (what isolcpus setups and irqbalance's banned CPUs do by hand): every IRQ whose
affinity (`/proc/irq/N/smp_affinity_list`) includes one of the cell's CPUs gets its affinity without
them, or every other online CPU when it had only those; the default affinity of IRQs registered
meanwhile (`/proc/irq/default_smp_affinity`, a hex mask) likewise. The kernel refuses to move some
(per-CPU timers, IRQs whose affinity the driver manages: EIO, EPERM, EINVAL): they are named, with
the device /proc/interrupts gives them, and left where they are.
"""

from __future__ import annotations

from dataclasses import replace

from jitterlab.model.tuning import Applied, Changed, Cpus, Refused
from jitterlab.model.units import cpu_list, parse_cpu_list
from jitterlab.targets.base import Target
from jitterlab.tunings import files
from jitterlab.tunings.base import Keeper, TuningBase, refused, register

IRQ_DIR = "/proc/irq"
AFFINITY = "smp_affinity_list"
DEFAULT_MASK = "/proc/irq/default_smp_affinity"
INTERRUPTS = "/proc/interrupts"
ONLINE = "/sys/devices/system/cpu/online"


@register
class IrqAway(TuningBase):
    name = "irq-away"
    cost = "the interrupts of the program's CPUs are served by the other CPUs, which they slow down"
    help = ("every movable IRQ's affinity (/proc/irq/*/smp_affinity_list) and the default one off "
            "the program's and probe's CPUs; the IRQs the kernel refuses to move are named")

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        return self._why(self._read(target), cpus)

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        found = self._read(target)
        why = self._why(found, cpus)
        if why is not None:
            raise refused(self.name, why)
        others = set(parse_cpu_list(found[self.path(ONLINE)].text) or ()) - set(cpus.all)
        plan = [(Changed(f.path, f.text or ""), value) for f in self._irqs(found)
                if (value := _moved(f.text, set(cpus.all), others)) is not None]
        default = found[self.path(DEFAULT_MASK)]
        if (mask := _moved_mask(default.text, set(cpus.all), others)) is not None:
            plan.append((Changed(default.path, default.text or ""), mask))
        keeper.keep(Applied(self.name, cpus, tuple(step for step, _ in plan)))
        written = files.write(target, [(step.path, value) for step, value in plan])
        names = _devices(found[self.path(INTERRUPTS)].text)
        steps, refusals = [], []
        for step, value in plan:
            got = written[step.path]
            if got.refused:
                refusals.append(Refused(step.path, value, got.refused))
                continue
            steps.append(replace(step, after=got.after))
            if step.path != default.path and parse_cpu_list(got.after) != parse_cpu_list(value):
                refusals.append(Refused(step.path, value, f"the kernel set {str(got.after).strip()!r}"))
        moved = len(steps) - (default.path in {s.path for s in steps})
        note = f"{moved} IRQ(s) moved to CPUs {cpu_list(others)}"
        if refusals:
            note += "; refused: " + ", ".join(f"{_irq_name(r.path, names)}: {r.why}" for r in refusals)
        return keeper.keep(Applied(self.name, cpus, tuple(steps), tuple(refusals), note=note))

    def _read(self, target: Target) -> dict[str, files.FileText]:
        paths = [self.path(ONLINE), self.path(DEFAULT_MASK), self.path(INTERRUPTS)]
        return files.read(target, paths, under=(self.path(IRQ_DIR), AFFINITY))

    def _irqs(self, found: dict[str, files.FileText]) -> list[files.FileText]:
        irqs = [f for f in found.values() if f.path.endswith(f"/{AFFINITY}")]
        return sorted(irqs, key=lambda f: int(_irq(f.path)) if _irq(f.path).isdigit() else -1)

    def _why(self, found: dict[str, files.FileText], cpus: Cpus) -> str | None:
        online = parse_cpu_list(found[self.path(ONLINE)].text)
        irqs = self._irqs(found)
        if online is None:
            return f"{ONLINE} cannot be read"
        if not cpus.all:
            return "the cell's program and probe have no CPUs of their own: there is nothing to move IRQs off"
        if not set(online) - set(cpus.all):
            return f"CPUs {cpu_list(cpus.all)} are every online CPU: none is left to take the IRQs"
        if not irqs:
            return f"no {IRQ_DIR}/*/{AFFINITY} here: this kernel cannot set IRQ affinity"
        if not any(f.writable for f in irqs):
            return f"{IRQ_DIR}/*/{AFFINITY} are not writable here (run jitterlab as root)"
        return None


def _moved(text: str | None, away: set[int], others: set[int]) -> str | None:
    """The affinity list without `away` (`others` when nothing else is left); None: leave it."""
    now = parse_cpu_list(text)
    if not now or not set(now) & away:
        return None
    return cpu_list(set(now) - away or others)


def _moved_mask(text: str | None, away: set[int], others: set[int]) -> str | None:
    """The hex mask ("3", "ffffffff,00000003") without `away`, written as wide as it was."""
    digits = (text or "").strip().replace(",", "")
    try:
        mask = int(digits, 16)
    except ValueError:
        return None
    away_bits = sum(1 << cpu for cpu in away)
    if not mask & away_bits:
        return None
    left = mask & ~away_bits or sum(1 << cpu for cpu in others)
    hex_digits = f"{left:0{len(digits)}x}"
    groups = [hex_digits[max(0, end - 8):end] for end in range(len(hex_digits), 0, -8)]
    return ",".join(reversed(groups))


def _irq(path: str) -> str:
    return path.rsplit("/", 2)[-2]


def _devices(interrupts: str | None) -> dict[str, str]:
    """IRQ number -> the devices /proc/interrupts names for it (its last column)."""
    out = {}
    for line in (interrupts or "").splitlines()[1:]:
        number, _, rest = line.strip().partition(":")
        fields = rest.split()
        if number.isdigit() and fields:
            out[number] = fields[-1]
    return out


def _irq_name(path: str, names: dict[str, str]) -> str:
    if not path.endswith(AFFINITY):
        return path
    irq = _irq(path)
    return f"IRQ {irq} ({names[irq]})" if irq in names else f"IRQ {irq}"
