"""governor-performance: the cell's CPUs at their highest frequency for its runs (cpufreq's
`performance` governor), as `cpupower frequency-set -g performance` sets it by hand.

Each CPU's `cpufreq/scaling_governor` is its policy's (CPUs of one clock domain share it): written once
per policy, put back as it was. A machine without a frequency scaling driver (most VMs, boards run
at a fixed clock) has nothing to set, and says so.
"""

from __future__ import annotations

from jitterlab.model.tuning import Applied, Changed, Cpus
from jitterlab.model.units import cpu_list, parse_cpu_list
from jitterlab.targets.base import Target
from jitterlab.tunings import files
from jitterlab.tunings.base import Keeper, TuningBase, refused, register

CPU_DIR = "/sys/devices/system/cpu"
ONLINE = f"{CPU_DIR}/online"
GOVERNOR = "performance"


@register
class GovernorPerformance(TuningBase):
    name = "governor-performance"
    cost = "the cell's CPUs kept at their highest clock: more power drawn, more heat"
    help = ("the cpufreq governor of the program's and probe's CPUs (all CPUs when they are not "
            "placed) set to performance for the runs")

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        return self._why(self._read(target, cpus), cpus)

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        found = self._read(target, cpus)
        why = self._why(found, cpus)
        if why is not None:
            raise refused(self.name, why)
        todo, seen = [], set()
        for cpu in self._cpus(found, cpus):
            governor = found[self._file(cpu, "scaling_governor")]
            policy = found[self._file(cpu, "related_cpus")].text or str(cpu)
            if policy not in seen and (governor.text or "").strip() != GOVERNOR:
                todo.append(Changed(governor.path, governor.text or ""))
            seen.add(policy)
        if not todo:
            return Applied(self.name, cpus, note=f"the governor is {GOVERNOR} already: nothing to change")
        keeper.keep(Applied(self.name, cpus, tuple(todo)))
        written = files.write(target, [(step.path, GOVERNOR) for step in todo])
        wrong = [w for w in written.values() if (w.after or "").strip() != GOVERNOR]
        if wrong:
            raise refused(self.name, f"{wrong[0].path} would not take {GOVERNOR} "
                                     f"({wrong[0].refused or f'it reads {wrong[0].after!r}'})")
        steps = tuple(Changed(s.path, s.before, written[s.path].after) for s in todo)
        befores = sorted({s.before.strip() for s in steps})
        note = f"{len(steps)} cpufreq policy(ies): {', '.join(befores)} -> {GOVERNOR}"
        return keeper.keep(Applied(self.name, cpus, steps, note=note))

    def _file(self, cpu: int, name: str) -> str:
        return self.path(f"{CPU_DIR}/cpu{cpu}/cpufreq/{name}")

    def _cpus(self, found: dict[str, files.FileText], cpus: Cpus) -> tuple[int, ...]:
        return cpus.all or parse_cpu_list(found[self.path(ONLINE)].text) or ()

    def _read(self, target: Target, cpus: Cpus) -> dict[str, files.FileText]:
        """The online CPUs, then each CPU's governor, the governors it has and its policy's CPUs."""
        online = self.path(ONLINE)
        found = files.read(target, [online])
        wanted = self._cpus(found, cpus)
        names = ("scaling_governor", "scaling_available_governors", "related_cpus")
        return found | files.read(target, [self._file(cpu, n) for cpu in wanted for n in names])

    def _why(self, found: dict[str, files.FileText], cpus: Cpus) -> str | None:
        wanted = self._cpus(found, cpus)
        if not wanted:
            return f"{ONLINE} cannot be read"
        governors = [found[self._file(cpu, "scaling_governor")] for cpu in wanted]
        if not all(g.exists for g in governors):
            missing = [cpu for cpu, g in zip(wanted, governors, strict=True) if not g.exists]
            return (f"CPU {cpu_list(missing)} has no cpufreq here (no frequency scaling driver: a VM, "
                    "or a fixed clock): there is no governor to set")
        for cpu in wanted:
            offered = (found[self._file(cpu, "scaling_available_governors")].text or "").split()
            if GOVERNOR not in offered:
                return f"CPU {cpu} has no {GOVERNOR} governor (it offers: {', '.join(offered) or 'none'})"
        if not all(g.writable for g in governors):
            return f"{CPU_DIR}/cpu*/cpufreq/scaling_governor are not writable here (run jitterlab as root)"
        return None
