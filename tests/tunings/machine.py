"""A fake machine for the tunings: the kernel files they read and write, as a tree of real files
under a root, and a target whose commands run for real on it (FakeTarget with fallback_local).

What a plain file cannot do, the tree stands in for: an IRQ the kernel will not move is a link to a
read-only sysfs attribute of this machine (it reads as a CPU list and refuses every write, even
root's); making or removing a cgroup fills or empties its directory as cgroupfs does; and a write
to a file with an effect (`effects`: cgroup.subtree_control takes "+cpuset" and lists it) leaves
what the kernel would.
"""

from __future__ import annotations

import os
import shutil
import struct
from collections.abc import Callable
from pathlib import Path

from jitterlab.targets.base import Completed
from jitterlab.targets.fake import FakeTarget
from jitterlab.tunings import files, journal

REFUSING = Path("/sys/devices/system/cpu/possible")  # read-only, a CPU list: refuses every write
IRQS = {"0": "0\n", "8": "0-3\n", "9": "1-2\n", "24": "1\n", "30": "2-3\n"}
INTERRUPTS = """\
           CPU0       CPU1       CPU2       CPU3
  0:         40          0          0          0   IO-APIC   2-edge      timer
  8:          0          1          0          0   IO-APIC   8-edge      rtc0
  9:          0          0          0          0   IO-APIC   9-fasteoi   acpi
 24:         10         20          0          0   PCI-MSI 512000-edge      ahci[0000:00:1f.2]
 30:          0          0          5          5   PCI-MSI 1048576-edge      eth0
 77:          0          9          0          0   PCI-MSIX 2-edge      nvme0q1
"""
DEFAULT_LATENCY_US = 2_000_000_000


class Machine:
    """The tree (`root`) and a target on it; `snapshot()` every file's bytes, for byte-for-byte checks."""

    def __init__(self, tmp_path: Path, *, made: bool = False) -> None:
        """The tree in tmp_path (`made`: the one an earlier Machine made there)."""
        self.root = str(tmp_path / "machine")
        self.workdir = tmp_path / "work"
        self.group = f"{self.root}/sys/fs/cgroup/jitterlab-isolated"
        self.effects: dict[str, Callable[[str, str], str]] = {
            f"{self.root}/sys/fs/cgroup/cgroup.subtree_control": self._controllers}
        self.target = self.on(FakeTarget(workdir=str(self.workdir), fallback_local=True))
        if made:
            return
        self.workdir.mkdir(exist_ok=True)
        files = {
            "sys/devices/system/cpu/online": "0-3\n",
            "proc/irq/default_smp_affinity": "f\n",
            "proc/interrupts": INTERRUPTS,
            "proc/sys/kernel/sched_rt_runtime_us": "950000\n",
            "proc/sys/kernel/random/boot_id": "6a8e58d0-boot-one\n",
            "proc/sys/kernel/osrelease": "6.12.48+deb13-amd64\n",
            "proc/self/mounts": f"proc /proc proc rw 0 0\ncgroup2 {self.root}/sys/fs/cgroup cgroup2 rw 0 0\n",
            "proc/self/timerslack_ns": "50000\n",
            "sys/fs/cgroup/cgroup.controllers": "cpuset cpu io memory pids\n",
            "sys/fs/cgroup/cgroup.subtree_control": "cpu memory pids\n",
            "sys/fs/cgroup/cpuset.cpus.effective": "0-3\n",
        }
        files |= {f"proc/irq/{irq}/smp_affinity_list": text for irq, text in IRQS.items()}
        for cpu in range(4):
            policy = "0-1" if cpu < 2 else "2-3"
            files |= {f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_governor": "schedutil\n",
                      f"sys/devices/system/cpu/cpu{cpu}/cpufreq/scaling_available_governors":
                          "performance powersave schedutil\n",
                      f"sys/devices/system/cpu/cpu{cpu}/cpufreq/related_cpus": f"{policy}\n"}
        for name, text in files.items():
            self.write(name, text)
        self.write_bytes("dev/cpu_dma_latency", struct.pack("=i", DEFAULT_LATENCY_US))

    def on(self, target: FakeTarget) -> FakeTarget:
        """`target` with the kernel's ways for this tree: a made cgroup has its files, rmdir takes
        them, a write to a file of `effects` leaves what the kernel would."""

        def write(argv: list[str]) -> Completed:
            head, pairs = argv[:4], argv[4:]
            for i in range(0, len(pairs) - 1, 2):
                path, value = pairs[i], pairs[i + 1]
                if path in self.effects and os.path.exists(path):
                    pairs[i + 1] = self.effects[path](Path(path).read_text(), value)
            return target._local.run([*head, *pairs])

        def mkdir(argv: list[str]) -> Completed:
            path = Path(argv[-1])
            if path.exists():
                return Completed(tuple(argv), 1, "", f"mkdir: cannot create directory '{path}': File exists")
            path.mkdir()
            made = {"cpuset.cpus": "\n", "cpuset.cpus.partition": "member\n", "cgroup.procs": ""}
            for name, text in made.items():
                (path / name).write_text(text)
            return Completed(tuple(argv), 0, "", "")

        def rmdir(argv: list[str]) -> Completed:
            shutil.rmtree(argv[-1], ignore_errors=True)
            return Completed(tuple(argv), 0, "", "")

        target.respond(["sh", "-c", files._WRITE], response=write)
        target.respond(["mkdir", "--", self.group], response=mkdir)
        target.respond(["sh", "-c", journal._RMDIR, "sh", self.group], response=rmdir)
        return target

    def _controllers(self, now: str, value: str) -> str:
        """cgroup.subtree_control: "+name" / "-name" enable or disable a controller it lists."""
        words = set(now.split())
        for word in value.split():
            (words.add if word[0] == "+" else words.discard)(word[1:])
        known = self.read("sys/fs/cgroup/cgroup.controllers").split()
        return " ".join(c for c in known if c in words) + "\n"

    def path(self, name: str) -> Path:
        return Path(self.root) / name

    def write(self, name: str, text: str) -> None:
        self.write_bytes(name, text.encode())

    def write_bytes(self, name: str, data: bytes) -> None:
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink():
            path.unlink()
        path.write_bytes(data)

    def read(self, name: str) -> str:
        return self.path(name).read_text()

    def refusing(self, name: str) -> None:
        """`name` becomes a file the kernel refuses to write (it reads as this machine's CPU list)."""
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.unlink(missing_ok=True)
        path.symlink_to(REFUSING)

    def remove(self, name: str) -> None:
        path = self.path(name)
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink()

    def snapshot(self) -> dict[str, bytes]:
        """Every file of the tree but the journal's, byte for byte (links: where they point)."""
        out = {}
        for dirpath, _, names in os.walk(self.root):
            for name in names:
                path = Path(dirpath) / name
                rel = str(path.relative_to(self.root))
                if rel.startswith("run/"):
                    continue
                out[rel] = f"-> {os.readlink(path)}".encode() if path.is_symlink() else path.read_bytes()
        return out

    def journal(self) -> list[str]:
        directory = self.path("run/jitterlab-tunings")
        return sorted(p.name for p in directory.iterdir()) if directory.exists() else []


def carries(pid: int, marker: str) -> bool:
    """Whether process `pid` runs and carries a run's marker (processes.spawn_recorded)."""
    try:
        return f"JITTERLAB_LIVE={marker}".encode() in Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return False
