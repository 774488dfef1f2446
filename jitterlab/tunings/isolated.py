"""isolated: the program's CPUs made an isolated cgroup v2 cpuset partition for a cell's runs, the
runtime counterpart of booting with isolcpus= (Documentation/admin-guide/cgroup-v2.rst, "Cpuset").

A cgroup of the root (`jitterlab-isolated`) gets the program's CPUs in `cpuset.cpus` and becomes a
partition with `cpuset.cpus.partition = isolated` (Linux 6.2 and later): the kernel takes those CPUs
from every other cgroup, so the tasks there move off them (only per-CPU kernel threads stay), and the
scheduler stops balancing load onto them. The program joins the partition as it starts (the
launcher writes its pid to the cgroup's `cgroup.procs`, then execs it). The cpuset controller is
enabled in the root's `cgroup.subtree_control` when it was not, and disabled again after.

Where cgroup v2 has no cpuset controller (cgroup v1 holds it: a hybrid hierarchy, many containers)
or cannot be written, the tuning is refused with that reason. The probe's CPU stays outside; a
probe placed on the program's own CPUs could not run beside it, and is refused too. So could a load
pinned to those CPUs: while they are isolated, only the program runs there.
"""

from __future__ import annotations

import re

from jitterlab.model.tuning import Applied, Changed, Cpus, Made
from jitterlab.model.units import cpu_list, parse_cpu_list
from jitterlab.targets.base import Target
from jitterlab.tunings import files
from jitterlab.tunings.base import Keeper, TuningBase, refused, register

MOUNTS = "/proc/self/mounts"
OSRELEASE = "/proc/sys/kernel/osrelease"
ONLINE = "/sys/devices/system/cpu/online"
GROUP = "jitterlab-isolated"
PARTITION = "isolated"
SINCE = (6, 2)  # the first Linux with isolated partitions
# $0 a name, $1 the partition's cgroup.procs, then the program's argv: it joins, then runs
_JOIN = r"""
printf '%s\n' "$$" > "$1" || { echo "$0: cannot join the isolated cpuset partition ($1)" >&2; exit 69; }
shift
exec "$@"
"""


@register
class Isolated(TuningBase):
    name = "isolated"
    cost = "the program's CPUs are taken from every other task (a load pinned to them too)"
    help = ("the program's CPUs as an isolated cgroup v2 cpuset partition for the runs (the runtime "
            "isolcpus): every other task moved off them")

    def refusal(self, target: Target, cpus: Cpus) -> str | None:
        return self._why(*self._read(target), cpus)

    def change(self, target: Target, cpus: Cpus, keeper: Keeper) -> Applied:
        mount, found = self._read(target)
        why = self._why(mount, found, cpus)
        if why is not None or mount is None:
            raise refused(self.name, why or "no cgroup v2 hierarchy")
        steps: list[Changed | Made] = []
        control = found[f"{mount}/cgroup.subtree_control"]
        if "cpuset" not in (control.text or "").split():
            steps.append(Changed(control.path, control.text or "", undo="-cpuset"))
            keeper.keep(Applied(self.name, cpus, tuple(steps)))
            got = files.write(target, [(control.path, "+cpuset")])[control.path]
            if "cpuset" not in (got.after or "").split():
                raise refused(self.name, f"the cpuset controller could not be enabled in {control.path} "
                                         f"({got.refused or 'it is not listed after'})")
            steps[-1] = Changed(control.path, control.text or "", got.after, undo="-cpuset")
        group = f"{mount}/{GROUP}"
        steps.append(Made(group))
        keeper.keep(Applied(self.name, cpus, tuple(steps)))
        made = target.run(["mkdir", "--", group])
        if not made.ok:
            raise refused(self.name, f"{group} cannot be made ({made.stderr.strip().rsplit(': ', 1)[-1]})")
        inside = files.read(target, [f"{group}/cpuset.cpus", f"{group}/cpuset.cpus.partition"])
        wanted = [(f"{group}/cpuset.cpus", cpu_list(cpus.program)),
                  (f"{group}/cpuset.cpus.partition", PARTITION)]
        written = files.write(target, wanted)
        steps += [Changed(path, inside[path].text or "", written[path].after) for path, _ in wanted]
        keeper.keep(Applied(self.name, cpus, tuple(steps)))
        state = (written[f"{group}/cpuset.cpus.partition"].after or "").strip()
        if state != PARTITION:
            said = written[f"{group}/cpuset.cpus.partition"].refused or state or "nothing"
            raise refused(self.name, f"the kernel would not make CPUs {cpu_list(cpus.program)} an isolated "
                                     f"partition: {said}")
        others = files.read(target, [f"{mount}/cpuset.cpus.effective"])[f"{mount}/cpuset.cpus.effective"]
        note = (f"CPUs {cpu_list(cpus.program)} isolated in {group}; the other cgroups run on CPUs "
                f"{(others.text or '?').strip()}")
        launcher = ("sh", "-c", _JOIN, "jitterlab-isolated", f"{group}/cgroup.procs")
        return keeper.keep(Applied(self.name, cpus, tuple(steps), launcher=launcher, note=note))

    def _read(self, target: Target) -> tuple[str | None, dict[str, files.FileText]]:
        """The cgroup v2 mount point (None: none), and what the checks read there."""
        found = files.read(target, [self.path(MOUNTS), self.path(OSRELEASE), self.path(ONLINE)])
        mount = _cgroup2(found[self.path(MOUNTS)].text)
        if mount is not None:
            names = ("cgroup.controllers", "cgroup.subtree_control", GROUP)
            found |= files.read(target, [f"{mount}/{name}" for name in names])
        return mount, found

    def _why(self, mount: str | None, found: dict[str, files.FileText], cpus: Cpus) -> str | None:
        release = found[self.path(OSRELEASE)].text or ""
        online = parse_cpu_list(found[self.path(ONLINE)].text)
        if mount is None:
            return ("no cgroup v2 hierarchy is mounted here (cgroup v1 only: boot with "
                    "systemd.unified_cgroup_hierarchy=1)")
        if "cpuset" not in (found[f"{mount}/cgroup.controllers"].text or "").split():
            return (f"cgroup v2 at {mount} has no cpuset controller (a cgroup v1 hierarchy holds it, as "
                    "in a hybrid setup or a container, or the kernel lacks CONFIG_CPUSETS)")
        version = re.match(r"(\d+)\.(\d+)", release)
        if version is None or (int(version[1]), int(version[2])) < SINCE:
            return (f"Linux {release.strip() or '?'} has no isolated cpuset partitions (6.2 and later): "
                    "boot with isolcpus= instead")
        if not found[f"{mount}/cgroup.subtree_control"].writable:
            return f"cgroup v2 at {mount} is not writable here (run jitterlab as root)"
        if found[f"{mount}/{GROUP}"].exists:
            return (f"{mount}/{GROUP} exists already (left by a jitterlab run that could not remove it?): "
                    f"rmdir it as root")
        if not cpus.program:
            return "the cell's program has no CPUs of its own: there is nothing to isolate"
        if set(cpus.probe) & set(cpus.program):
            return "the probe's CPU is one of the program's: it could not run beside an isolated program"
        if online is None or not set(online) - set(cpus.program):
            return f"CPUs {cpu_list(cpus.program)} are every online CPU: none would be left for the rest"
        return None


def _cgroup2(mounts: str | None) -> str | None:
    """Where cgroup v2 is mounted (/proc/self/mounts), or None."""
    for line in (mounts or "").splitlines():
        fields = line.split()
        if len(fields) >= 3 and fields[2] == "cgroup2":
            return fields[1]
    return None
