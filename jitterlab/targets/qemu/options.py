"""The [[target]] options of kind = "qemu", validated into QemuOptions (nothing is booted here)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass

from jitterlab.model.errors import UserError, shown
from jitterlab.model.registry import did_you_mean
from jitterlab.model.units import MAX_CAMPAIGN_NS, parse_duration_ns
from jitterlab.targets.capabilities import EmulatedMachine
from jitterlab.targets.qemu.machines.profile import MachineProfile
from jitterlab.targets.qemu.machines.registry import DEFAULT, MACHINES
from jitterlab.targets.qemu.rootfs import package_set

_HELP = {
    "cpus": "virtual CPUs, e.g. cpus = 2 (default 2)",
    "memory": 'guest memory, e.g. memory = "1G" (default "1G"; at least "256M")',
    "accel": '"auto" (kvm where it really works, else tcg), "kvm" or "tcg" (default "auto")',
    "cmdline": 'extra kernel parameters, e.g. cmdline = "isolcpus=1 nohz_full=1"',
    "boot_timeout": 'how long the guest may take to come up, e.g. "120s" (the default)',
    "gpio": '"virtual": load the virtual GPIO chip "jl-vgpio" (4 lines, 0 drives 1, 2 drives 3; '
    'docs/vm-lab.md), or "none" (the default: Debian\'s kernels have no GPIO chip)',
    "workdir": 'absolute directory in the guest for jitterlab\'s files (default: "/tmp/jitterlab-root")',
    "packages": 'a board\'s root: Debian packages besides the machine\'s own, e.g. packages = ["nodejs"] '
    "(a root per package set is built once and cached)",
}


def _either(names: list[str]) -> str:
    quoted = [f'"{n}"' for n in names]
    return quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"


def option_help() -> dict[str, str]:
    """Each [[target]] option of kind "qemu" with its line of help; the machines and their kernels are
    read from the registry when asked, so that a machine registered since is in it."""
    standard: dict[str, list[str]] = {}
    for entry in MACHINES:
        if "standard" in entry.obj.kernels:
            standard.setdefault(entry.obj.kernels["standard"], []).append(entry.name)
    packages = ", ".join(f"{package} on {' and '.join(names)}" for package, names in standard.items())
    return {
        "machine": f'the qemu machine profile: {_either(MACHINES.names())} (default "{DEFAULT}"; each with '
        "its architecture and kernels in `jitterlab list`)",
        "kernel": f'the kernel: "standard" ({packages}), "rt" (their PREEMPT_RT packages, where Debian has '
        'one), a version like "6.12" or "6.12-rt" (Debian backports), or the path of a kernel file '
        '(default: "standard")',
        **_HELP,
    }


_VERSION = re.compile(r"^(\d+\.\d+)(-rt)?$")
MAX_PACKAGE_NAME = 128  # Debian's longest are under 80 characters
MAX_PACKAGES = 1000
MIN_MEMORY = 256 << 20
MAX_MEMORY = 64 << 30
MAX_CPUS = 64
_SIZE = re.compile(r"^\s*(\d+)\s*([KMGT]?)(?:i?B)?\s*$", re.IGNORECASE)
_SIZE_FACTOR = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# the guest's boot depends on these (kernel_cmdline; jitterlab.* are its init's); a cmdline that
# sets them would break it
_RESERVED_PARAMS = ("init=", "rdinit=", "console=", "root=", "panic=")
_RESERVED_PREFIX = "jitterlab."


def kernel_words(cmdline: str) -> list[str]:
    """The parameters as the kernel reads a command line: words split at spaces outside double
    quotes, the quotes dropped ("rdinit=/bin/sh" and rdinit="/bin/sh" are rdinit=/bin/sh)."""
    words, word, quoted, started = [], [], False, False
    for c in cmdline:
        if c == '"':
            quoted, started = not quoted, True
        elif c.isspace() and not quoted:
            if started:
                words.append("".join(word))
            word, started = [], False
        else:
            word.append(c)
            started = True
    if started:
        words.append("".join(word))
    return words


def kernel_cmdline(profile: MachineProfile, extra: str) -> str:
    """The guest kernel's command line: what the boot needs, what the machine profile needs, then the
    campaign's `cmdline`."""
    words = [f"console={profile.console}", "loglevel=4", "panic=-1", "rdinit=/init"]
    if profile.boots_board_root:
        words.append(f"jitterlab.root={profile.devices.root_device}")
    if not profile.devices.shares_9p:
        words.append("jitterlab.shares=none")
    return " ".join([*words, profile.cmdline, extra]).replace("  ", " ").strip()


@dataclass(frozen=True)
class KernelSpec:
    """Which kernel: a Debian metapackage (and version prefix), or a file on this machine."""

    text: str  # as written in the campaign
    metapackage: str | None = None  # the machine's package of the flavour: linux-image-rt-amd64
    version: str | None = None  # "6.12": the newest 6.12.x; None: apt's candidate
    path: str | None = None
    flavour: str | None = None  # "standard" | "rt" (None for a kernel file)

    @property
    def rt(self) -> bool:
        return self.flavour == "rt"


@dataclass(frozen=True)
class QemuOptions:
    kernel: KernelSpec
    profile: MachineProfile  # the `machine` key: what the guest is
    cpus: int = 2
    memory_bytes: int = 1 << 30
    accel: str = "auto"
    cmdline: str = ""
    boot_timeout_s: float = 120.0
    workdir: str | None = None
    gpio: str = "none"  # "virtual": the jl-vgpio chip is loaded at boot
    packages: tuple[str, ...] = ()  # a board's root image: what it has besides the profile's packages

    def declared(self) -> EmulatedMachine:
        """What the guest will be, for the campaign's checks before it boots."""
        p = self.profile
        return EmulatedMachine(p.name, self.cpus, p.gpio_soc, p.traced_gpio.soc if p.traced_gpio else None)


def parse_kernel(
    value: object, where: str, *, check_files: bool = False, profile: MachineProfile | None = None
) -> KernelSpec:
    """The kernel a campaign names, for a guest of `profile` (the default when None)."""
    profile = profile or MACHINES.get(DEFAULT, where)
    flavours = list(profile.kernels)
    forms = ", ".join(f'"{f}"' for f in flavours)
    if not isinstance(value, str) or not value.strip():
        raise UserError(f'{where}: expected {forms}, a version like "6.12", or a path, got {value!r}')
    text = value.strip()
    m = _VERSION.match(text)
    flavour = text if text in ("standard", "rt") else ("rt" if m[2] else "standard") if m else None
    if flavour is not None:
        if flavour not in profile.kernels:
            raise UserError(f"{where}: Debian has no {flavour} kernel for qemu machine {profile.name!r} "
                            f"({profile.arch.name}); write {forms}")
        return KernelSpec(text, metapackage=profile.kernels[flavour], version=m[1] if m else None,
                          flavour=flavour)
    if text.startswith(("/", "~", "./", "../")):
        path = os.path.expanduser(text)
        if check_files and not os.path.isfile(path):
            raise UserError(
                f"{where}: no such file {text!r}; give the path of a {profile.image.label} "
                "(e.g. /boot/vmlinuz-...)"
            )
        return KernelSpec(text, path=os.path.abspath(path))
    hint = did_you_mean(text, flavours)
    versions = '"6.12" or "6.12-rt"' if "rt" in profile.kernels else '"6.12"'
    raise UserError(
        f"{where}: unknown kernel {text!r}; {hint}write {forms}, a Debian version like {versions}, "
        f"or the path of a {profile.image.label}"
    )


def memory_bytes(value: object, where: str, profile: MachineProfile | None = None) -> int:
    match = _SIZE.match(value) if isinstance(value, str) else None
    n = int(match[1]) * _SIZE_FACTOR[match[2].upper()] if match else value
    if isinstance(n, bool) or not isinstance(n, int):
        raise UserError(f'{where}: expected a size like "1G" or "512M", got {shown(value)}')
    if not MIN_MEMORY <= n <= MAX_MEMORY:
        raise UserError(f'{where}: {shown(value)} is out of range; give "256M" to "64G" (the guest runs from '
                        "RAM)")
    most = profile.max_memory_bytes if profile is not None else None
    if most is not None and n > most:
        raise UserError(f"{where}: {shown(value)} is more than qemu machine {profile.name!r} takes; give "
                        f'"{most >> 20}M" or less')
    return n


def parse_options(options: Mapping[str, object], where: str, *, check_files: bool = False) -> QemuOptions:
    """Check the options of one qemu target; `where` is e.g. "campaign.toml: target[1]".

    `check_files`: also that a kernel given as a path exists here (when booting, not when reading
    a campaign, which may be checked on another machine).
    """
    known = ("machine", "kernel", *_HELP)
    for key in options:
        if key not in known:
            hint = did_you_mean(str(key), known)
            raise UserError(
                f"{where}.{key}: unknown option of a qemu target; {hint}known: {', '.join(sorted(known))}"
            )
    name = options.get("machine", DEFAULT)
    if not isinstance(name, str):
        known = ", ".join(MACHINES.names())
        raise UserError(f'{where}.machine: expected the name of a qemu machine, e.g. "{DEFAULT}" '
                        f"(known: {known}), got {shown(name)}")
    profile = MACHINES.get(name, f"{where}.machine")
    kernel = parse_kernel(
        options.get("kernel", "standard"), f"{where}.kernel", check_files=check_files, profile=profile
    )
    cpus = options.get("cpus", profile.cpus)
    if isinstance(cpus, bool) or not isinstance(cpus, int) or not 1 <= cpus <= MAX_CPUS:
        raise UserError(f"{where}.cpus: expected a number of CPUs 1-{MAX_CPUS}, e.g. cpus = 2, "
                        f"got {shown(cpus)}")
    if profile.max_cpus is not None and cpus > profile.max_cpus:
        raise UserError(f"{where}.cpus: qemu machine {profile.name!r} takes 1-{profile.max_cpus} CPUs, got "
                        f"{cpus}; give cpus = {profile.max_cpus} or fewer")
    memory = profile.memory_bytes
    if "memory" in options:
        memory = memory_bytes(options["memory"], f"{where}.memory", profile)
    accel = options.get("accel", "auto")
    if accel not in ("auto", "kvm", "tcg"):
        hint = did_you_mean(str(accel), ["auto", "kvm", "tcg"])
        raise UserError(f'{where}.accel: expected "auto", "kvm" or "tcg", got {accel!r}; {hint}'.rstrip("; "))
    if accel == "kvm" and "kvm" not in profile.accel:
        raise UserError(
            f'{where}.accel: qemu machine {profile.name!r} is emulated only; give "auto" or "tcg"'
        )
    cmdline = options.get("cmdline", "")
    if not isinstance(cmdline, str) or not cmdline.isprintable() or len(cmdline) > 1024:
        raise UserError(
            f'{where}.cmdline: expected kernel parameters on one line, e.g. "isolcpus=1", got {cmdline!r}'
        )
    profile_params = {w.partition("=")[0] for w in kernel_words(profile.cmdline)}  # iomem= on a board
    for word in kernel_words(cmdline):
        name = word.partition("=")[0]
        if f"{name}=" in _RESERVED_PARAMS or name.startswith(_RESERVED_PREFIX) or name in profile_params:
            raise UserError(
                f"{where}.cmdline: {name}= is set by jitterlab to boot the guest; remove {shown(word)}"
            )
    whole = len(kernel_cmdline(profile, cmdline.strip()).encode())
    if whole >= profile.max_cmdline:  # the kernel would cut the end off, the campaign's own words
        raise UserError(f"{where}.cmdline: with jitterlab's own parameters the kernel command line is "
                        f"{whole} bytes, and the {profile.arch.name} kernel reads {profile.max_cmdline - 1}; "
                        "shorten it")
    timeout_ns = (parse_duration_ns(options["boot_timeout"], f"{where}.boot_timeout", MAX_CAMPAIGN_NS)
                  if "boot_timeout" in options else round(profile.boot_timeout_s * 1e9))
    if timeout_ns < 5_000_000_000:
        raise UserError(f'{where}.boot_timeout: a guest needs seconds to boot; give "5s" or more')
    workdir = options.get("workdir")
    if workdir is not None and not (
        isinstance(workdir, str) and workdir.startswith("/") and workdir.rstrip("/") and "\n" not in workdir
    ):
        raise UserError(f'{where}.workdir: expected an absolute path, e.g. "/tmp/jitterlab", got {workdir!r}')
    gpio = options.get("gpio", profile.gpio[0])
    if gpio not in ("none", "virtual"):
        raise UserError(f'{where}.gpio: expected "virtual" (the jl-vgpio chip) or "none", got {gpio!r}')
    if gpio not in profile.gpio:
        raise UserError(f"{where}.gpio: qemu machine {profile.name!r} offers gpio = "
                        + " or ".join(f'"{g}"' for g in profile.gpio) + f", not {gpio!r}")
    if gpio == "virtual" and kernel.path is not None:
        raise UserError(f'{where}.gpio: the virtual GPIO chip is built against a Debian kernel\'s headers; '
                        f'give kernel = "standard", "rt" or a version, or remove gpio')
    packages = _packages(options.get("packages", []), f"{where}.packages")
    if packages and not profile.boots_board_root:
        raise UserError(f"{where}.packages: qemu machine {profile.name!r} runs this machine's own root; "
                        "install the packages here instead, or remove packages")
    return QemuOptions(
        packages=packages,
        kernel=kernel,
        profile=profile,
        gpio=gpio,  # type: ignore[arg-type]
        cpus=cpus,
        memory_bytes=memory,
        accel=accel,  # type: ignore[arg-type]
        cmdline=cmdline.strip(),
        boot_timeout_s=timeout_ns / 1e9,
        workdir=workdir.rstrip("/") if workdir else None,
    )


def _packages(value: object, where: str) -> tuple[str, ...]:
    """The `packages` of a board's root, checked when the campaign is read by the rule the root is
    built with (rootfs.py); bounded first, so that no message echoes a huge name."""
    if not isinstance(value, list) or not all(isinstance(p, str) for p in value):
        raise UserError(f'{where}: expected a list of Debian package names, e.g. ["nodejs"], '
                        f"got {shown(value)}")
    if len(value) > MAX_PACKAGES:
        raise UserError(f"{where}: {len(value)} packages; give at most {MAX_PACKAGES}")
    for name in value:
        if len(name) > MAX_PACKAGE_NAME:
            raise UserError(f"{where}: a package name of {len(name)} characters; Debian's are at most "
                            f"{MAX_PACKAGE_NAME} ({shown(name)})")
    package_set(tuple(value), where)
    return tuple(dict.fromkeys(value))
