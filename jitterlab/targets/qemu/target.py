"""A Debian kernel booted with qemu on this machine, reached over SSH like any board.

What the guest is (emulator, machine, kernel packages, devices, root, compilers) is its machine
profile (machines/); the x86-64 PC, "pc", is the default. Its guest runs this machine's own root
file system, shared read-only over 9p under a tmpfs overlay (init.c), with the kernel package's
tree laid on top, so it has every tool this machine has (sh, make, gcc, python3, ...) and the
kernel's modules and headers where Debian puts them. Its sshd (this machine's /usr/sbin/sshd, with
keys made for this boot) listens behind qemu's user-mode network on a free loopback port; commands
and files then travel as SSH sessions over one ControlMaster connection, exactly as for an ssh
target (ssh/sessions.py).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from jitterlab.model.errors import TargetLost, UserError
from jitterlab.targets import qmp
from jitterlab.targets.capabilities import (
    AnswersSlowly,
    Capability,
    CrossBuilt,
    ExaminesMemory,
    GpioTrace,
    KeepsKernelModules,
    RecordsGpioOutputs,
    VirtualMachine,
    WordReader,
    command_timeout_s,
)
from jitterlab.targets.qemu import accel as qemu_accel
from jitterlab.targets.qemu import cross_modules, devicetree
from jitterlab.targets.qemu import initrd as qemu_initrd
from jitterlab.targets.qemu import kernels as qemu_kernels
from jitterlab.targets.qemu import modules as qemu_modules
from jitterlab.targets.qemu import rootfs as qemu_rootfs
from jitterlab.targets.qemu import vgpio as qemu_vgpio
from jitterlab.targets.qemu.machines.profile import MachineProfile
from jitterlab.targets.qemu.machines.registry import DEFAULT
from jitterlab.targets.qemu.options import QemuOptions, kernel_cmdline
from jitterlab.targets.qemu.scripts import SSHD_CONFIG, STAGE2
from jitterlab.targets.qemu.vm import VM, BootSpec
from jitterlab.targets.ssh.loopback_sshd import free_port
from jitterlab.targets.ssh.options import SSHOptions
from jitterlab.targets.ssh.sessions import OverSSH, SSHSessions
from jitterlab.targets.ssh.target import SSHTarget

# An emulated (tcg) guest answers a handshake or a keep-alive slowly, and not at all while its
# emulated CPUs run real-time threads (timerlat at FIFO 95 on every CPU) on a busy host: a minute
# of silence is tolerated there before the guest counts as lost; under kvm what an ssh target gets.
SSH_TIMEOUTS_S = {"tcg": (60.0, 60.0), "kvm": (20.0, 15.0)}  # accel: (connect, alive)
_PORT_TAKEN = "Could not set up host forwarding rule"


def profile_offers(profile: MachineProfile, cap: type[Capability]) -> bool:
    """What a guest of `profile` offers of the capabilities a QemuTarget declares."""
    if cap is RecordsGpioOutputs:
        return profile.traced_gpio is not None
    if cap is ExaminesMemory:  # a board's GPIO registers; the pc guest has none to read
        return profile.boots_board_root
    return True


class QemuTarget(
    OverSSH, VirtualMachine, KeepsKernelModules, CrossBuilt, AnswersSlowly, RecordsGpioOutputs, ExaminesMemory
):
    """A VM this process boots; boot() before use, close() shuts it down (also on errors)."""

    kind = "qemu"

    def __init__(self, name: str, options: QemuOptions, key: str | None = None,
                 devices: tuple[str, ...] = ()) -> None:
        self.name = name
        self.options = options
        self.key = key or f"target {name!r}"  # its [[target]] in messages about its options
        self.devices = devices  # qemu arguments of devices wired to the board (a unit's serial port)
        self.profile = options.profile
        self.workdir = options.workdir or ""
        self.kernel: qemu_kernels.Kernel | None = None
        self._accel = ""  # "kvm" | "tcg" once booted
        self.accel_why = ""
        self._boot_s: float | None = None
        self.vm: VM | None = None
        self.dir = Path(tempfile.mkdtemp(prefix="jl-qemu-"))
        self._ssh: SSHTarget | None = None
        self._sessions = None  # type: ignore[assignment]
        self.board_root: qemu_rootfs.BoardRoot | None = None  # when the profile boots one

    # --- capabilities ------------------------------------------------------------------------------

    def offers(self, cap: type[Capability]) -> bool:
        return profile_offers(self.profile, cap)

    def gpio_trace(self) -> GpioTrace:
        traced = self.profile.traced_gpio
        if traced is None:
            raise UserError(f"{self.where()}: qemu machine {self.profile.name!r} traces no GPIO controller")
        return GpioTrace(self.dir / "gpio-trace.log", traced.soc, traced.event)

    def monitor_socket(self) -> Path:
        """The QMP socket the board is started with, kept for probes (word_reader)."""
        return self.dir / "qmp.sock"

    def word_reader(self, address: int) -> WordReader:
        # a slow board's monitor may pause for seconds between answers: that is a blind span of the
        # probe's, not a failure, unless it lasts as long as any command on this board may
        return qmp.open_word(self.monitor_socket(), address, command_timeout_s(self, qmp.GREETING_TIMEOUT_S))

    @property
    def vm_accel(self) -> str:
        """"kvm" | "tcg", recorded in the sysinfo snapshot ("" before boot())."""
        return self._accel

    @property
    def boot_s(self) -> float | None:
        """qemu started -> guest ready (wall time), s."""
        return self._boot_s

    def vm_facts(self) -> dict[str, object]:
        facts: dict[str, object] = {"vm_machine": self.profile.name}
        if self.kernel is not None and self.kernel.asked:  # a Debian kernel: asked for, got, why
            facts["vm_kernel"] = self.kernel.description
            facts["vm_kernel_asked"] = self.kernel.asked
            facts["vm_kernel_packages"] = " ".join(self.kernel.packages)
            if self.kernel.note:
                facts["vm_kernel_note"] = self.kernel.note
        if self.board_root is not None:
            facts["vm_root"] = self.board_root.description
        if self.profile.cmdline:
            facts["vm_machine_cmdline"] = self.profile.cmdline
        if self.profile.dt_edits:
            facts["vm_dt_edits"] = devicetree.describe(self.profile.dt_edits)
        return facts

    @property
    def alive_timeout_s(self) -> float:
        return SSH_TIMEOUTS_S[self._accel or "tcg"][1]

    @property
    def cross_cc(self) -> str:
        """The profile's compiler; for a board's own root image, with its tree as the sysroot (its
        headers, its libraries and their pkg-config files: what the board runs is what links)."""
        if self.board_root is not None:
            return f"{self.profile.build.cc} --sysroot={self.board_root.sysroot}"
        return self.profile.build.cc

    def where(self) -> str:
        kernel = self.kernel.release if self.kernel else self.options.kernel.text
        qemu = "qemu" if self.profile.name == DEFAULT else f"qemu {self.profile.name}"
        return f"target {self.name!r} ({qemu}, kernel {kernel})"

    # --- boot -------------------------------------------------------------------------------------

    def boot(self) -> QemuTarget:
        """Prepare the kernel (fetched once into the cache), start qemu, wait for the guest, connect."""
        o, where, profile = self.options, self.key, self.profile
        _check_host(o, where)
        accel = qemu_accel.detect(o.accel, where, profile.kvm_missing())
        self._accel, self.accel_why = accel.name, accel.why
        self.kernel = qemu_kernels.prepare(o.kernel, profile, f"{where}.kernel")
        if self.kernel.note:
            self._say(f"kernel {self.kernel.description}: {self.kernel.note}")
        if profile.boots_board_root:
            packages = tuple(dict.fromkeys((*profile.board_root_packages, *o.packages)))
            self.board_root = qemu_rootfs.prepare_board_root(profile.arch.name, packages, f"{where}.machine",
                                                             qemu_kernels.cache_root(), progress=self._say)
        boot_dir = self._write_boot_share()
        initrd, shares = self.kernel.initrd, (("jlkernel", self.kernel.tree), ("jlboot", boot_dir))
        if self.board_root is None:  # the guest runs this machine's own root
            shares = (("jlroot", Path("/")), *shares)
        if not profile.devices.shares_9p:  # no virtio: the per-boot files ride in the initramfs
            initrd, shares = self.dir / "initrd.cpio", ()
            qemu_initrd.with_files(self.kernel.initrd, boot_dir, "jlboot", initrd)
        for _attempt in range(3):
            port = free_port()
            spec = BootSpec(
                profile=profile,
                image=self.kernel.image,
                dtb=self.kernel.dtb,
                initrd=initrd,
                append=kernel_cmdline(profile, o.cmdline),
                cpus=o.cpus,
                memory_bytes=o.memory_bytes,
                accel=accel.name,
                shares=shares,
                ssh_port=port,
                console=self.dir / "console.log",
                disk=self.board_root.image if self.board_root is not None else None,
                trace=self.gpio_trace().path if profile.traced_gpio is not None else None,
                monitor=self.monitor_socket(),
                devices=self.devices,
            )
            started = time.monotonic()
            self.vm = VM(spec, self.dir / "qemu.log")
            state, _uptime = self.vm.wait_ready(o.boot_timeout_s)
            if state == "ready":
                self._boot_s = time.monotonic() - started
                break
            self.vm.stop()
            if _PORT_TAKEN not in self._qemu_log():  # else another program took the port: again
                raise self._boot_error(state)
        else:
            raise TargetLost(f"{self.where()}: no free loopback port for its SSH forwarding after 3 tries")
        self._connect(port)
        if o.gpio == "virtual":
            qemu_vgpio.load(self, self.kernel.tree.parent, self.where())
        return self

    def _say(self, text: str) -> None:
        """A long step of the boot (a board root built the first time), on stderr: opening targets
        comes before any progress bar."""
        print(f"target {self.name!r}: {text}", file=sys.stderr, flush=True)

    def kernel_module(self, sources: Path, name: str) -> str:
        """`name`.ko of the kbuild sources in `sources` for the guest's kernel, in the guest (its
        path there): built once per kernel and source version and kept with the kernel here, since
        the guest forgets it at every boot — in the guest when it runs this machine's userland
        (kbuild takes minutes there), on this machine with the board's cross compiler when the
        board has its own root (a board image has no compiler).
        UserError naming the kernel and the cause when it cannot be built."""
        assert self.kernel is not None, "kernel_module() before boot()"
        if self.board_root is not None:  # a board has no compiler: built here, against its kernel's headers
            built = cross_modules.controller_module(
                sources, name, self.kernel.tree, self.kernel.release, self.profile.arch.name,
                self.kernel.host_kbuild, self.kernel.tree.parent, self.where())
            return qemu_modules.put_module(self, built, name)
        return qemu_modules.guest_module(self, sources, name, self.kernel.tree.parent, self.where())

    def _write_boot_share(self) -> Path:
        """Keys, sshd's configuration, stage 2 and the host name: what the guest reads at boot."""
        boot = self.dir / "boot"
        boot.mkdir()
        _keygen(boot / "host_key")
        _keygen(self.dir / "client_key")
        (boot / "authorized_keys").write_text((self.dir / "client_key.pub").read_text())
        (boot / "sshd_config").write_text(SSHD_CONFIG)
        (boot / "stage2.sh").write_text(STAGE2)
        (boot / "hostname").write_text(re.sub(r"[^A-Za-z0-9-]", "-", self.name)[:63] or "jitterlab")
        return boot

    def _connect(self, port: int) -> None:
        key_type, key = (self.dir / "boot" / "host_key.pub").read_text().split()[:2]
        (self.dir / "known_hosts").write_text(f"[127.0.0.1]:{port} {key_type} {key}\n")
        connect_s, alive_s = SSH_TIMEOUTS_S[self._accel or "tcg"]
        options = SSHOptions(
            host="127.0.0.1",
            port=port,
            user="root",
            key=str(self.dir / "client_key"),
            known_hosts=str(self.dir / "known_hosts"),
            connect_timeout_s=connect_s,
            alive_timeout_s=alive_s,
            workdir=self.options.workdir,
        )
        self._ssh = SSHTarget(self.name, options)  # builds the ssh command line, owns the master
        self._sessions = SSHSessions(
            self.name,
            self.where(),
            self._ssh.ssh_argv,
            control_path=self._ssh.control_path,
            connect_timeout_s=connect_s,
            failure=self._failure,
            lost_hint=f"; the guest ({self.vm_accel}) may also have been silent for {alive_s:g}s"
                      + (": an emulated guest on a busy machine" if self.vm_accel == "tcg" else ""),
        )
        self.workdir = self._sessions.connect(self.options.workdir)

    # --- errors -----------------------------------------------------------------------------------

    def console_tail(self, lines: int = 4) -> str:
        """The last lines the guest printed, on one line."""
        text = self.vm.console_text() if self.vm else ""
        tail = [line.strip() for line in text.splitlines() if line.strip()][-lines:]
        return " | ".join(tail)[-400:] or "(the console is empty)"

    def _qemu_log(self) -> str:
        try:
            return (self.dir / "qemu.log").read_text(errors="replace")
        except OSError:
            return ""

    def _boot_error(self, state: str) -> Exception:
        # qemu's own words count when it ended by itself; after a timeout jitterlab stopped it
        qemu_said = [line for line in self._qemu_log().splitlines()
                     if line.startswith(self.profile.qemu) and "terminating on signal" not in line]
        if state != "timeout" and qemu_said and not (self.vm and self.vm.console_text().strip()):
            return UserError(f"{self.where()}: qemu refused to start: {qemu_said[-1]}")
        assert self.kernel is not None
        if state == "timeout":
            return TargetLost(
                f"{self.where()}: {self.kernel.description} did not come up within "
                f"{self.options.boot_timeout_s:g}s (boot_timeout); console: {self.console_tail()}"
            )
        return TargetLost(
            f"{self.where()}: {self.kernel.description} did not boot; console: {self.console_tail()}"
        )

    def _failure(self, stderr: str) -> Exception | None:
        if self.vm is not None and not self.vm.alive():
            return TargetLost(f"{self.where()}: the VM stopped; console: {self.console_tail()}")
        return self._ssh.failure(stderr) if self._ssh is not None else None

    # --- the end ----------------------------------------------------------------------------------

    def close(self) -> None:
        """Stop what runs in the guest, end the SSH connection, shut qemu down (idempotent)."""
        try:
            if self._sessions is not None:
                self._sessions.close()
            if self._ssh is not None:
                self._ssh.close()
        finally:
            if self.vm is not None:
                self.vm.stop()
            shutil.rmtree(self.dir, ignore_errors=True)


def _check_host(o: QemuOptions, where: str) -> None:
    """What this machine must have to boot the guest (the options themselves are already valid)."""
    profile = o.profile
    if shutil.which(profile.qemu) is None:
        raise UserError(
            f"{where}: {profile.qemu} is missing on this machine (apt install {profile.qemu_package})"
        )
    for tool, package in (
        ("setpriv", "util-linux"),
        ("ssh", "openssh-client"),
        ("ssh-keygen", "openssh-client"),
    ):
        if shutil.which(tool) is None:
            raise UserError(f"{where}: {tool} is missing on this machine (apt install {package})")
    if not profile.boots_board_root and not os.access("/usr/sbin/sshd", os.X_OK):
        raise UserError(f"{where}: the guest runs this machine's /usr/sbin/sshd (apt install openssh-server)")
    host_cpus = os.cpu_count() or 1
    if o.cpus > host_cpus:
        raise UserError(
            f"{where}.cpus: {o.cpus} virtual CPUs, but this machine has {host_cpus}; "
            f"give cpus = {host_cpus} or fewer"
        )
    total = _mem_total_bytes()
    if total is not None and o.memory_bytes >= total:
        raise UserError(
            f"{where}.memory: {o.memory_bytes >> 20} MiB is not less than this machine's "
            f"{total >> 20} MiB; give less"
        )


def _mem_total_bytes() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


def _keygen(path: Path) -> None:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "jitterlab-qemu", "-f", str(path)],
        check=True,
        stdin=subprocess.DEVNULL,
        capture_output=True,
    )
