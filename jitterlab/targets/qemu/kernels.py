"""Debian kernels for qemu targets, fetched into a per-user cache and prepared to boot.

The packages of a kernel (apt.py) are fetched once and unpacked with `dpkg-deb -x` into
<cache>/kernels/<image package>_<version>/tree — nothing is installed on this machine. The tree
is the guest's top file-system layer, so /lib/modules/<release> (with `build`), /usr/src/
linux-headers-* and /boot/config-<release> appear in the guest where Debian puts them.

A kernel of another architecture than this machine's (an arm64 board's) comes from jitterlab's
apt state of that architecture; its tree's linux-kbuild holds programs of that architecture
(fixdep, modpost), so the entry also gets this machine's own linux-kbuild of the same version,
unpacked apart in <entry>/kbuild-host, to build the board's modules here.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import devicetree
from jitterlab.targets.qemu import initrd as qemu_initrd
from jitterlab.targets.qemu.apt import Resolved, find_host_package, find_packages
from jitterlab.targets.qemu.apt_state import Apt, Package, last_line, locked
from jitterlab.targets.qemu.machines.profile import MachineProfile, host_arch
from jitterlab.targets.qemu.options import KernelSpec


def cache_root() -> Path:
    """The per-user cache: $XDG_CACHE_HOME/jitterlab, else ~/.cache/jitterlab."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "jitterlab"


@dataclass(frozen=True)
class Kernel:
    """A kernel ready to boot."""

    description: str  # for messages: "linux-image-6.1.0-56-rt-amd64 6.1.192-2" or the file
    release: str
    image: Path  # what qemu loads, in the machine's form (e.g. the ELF kernel with a PVH entry)
    initrd: Path
    tree: Path  # the guest's top layer: the unpacked packages (empty for a kernel file)
    dtb: Path | None = None  # the device tree, for a machine that takes one from the kernel
    # a kernel of another architecture: where this machine's linux-kbuild of its version is unpacked
    # (<entry>/kbuild-host, holding usr/lib/linux-kbuild-6.1/scripts), to build its modules here;
    # None for a kernel of this machine's architecture or a kernel file
    host_kbuild: Path | None = None


# --- the cache -----------------------------------------------------------------------------------


def prepare(spec: KernelSpec, machine: MachineProfile, where: str, cache: Path | None = None) -> Kernel:
    """Fetch (once) and prepare the kernel `spec` names for `machine`; `where` prefixes errors."""
    cache = cache or cache_root()
    kernels = cache / "kernels"
    if spec.path is not None:
        return _prepare_file(Path(spec.path), machine, where, cache)
    resolved, apt = find_packages(spec, where, cache, machine.arch)
    entry = kernels / resolved.key
    with locked(kernels / f"{resolved.key}.lock"):
        if not (entry / "tree").is_dir():
            if apt.state is not None:
                apt.refresh()
            _fetch(resolved, apt, entry, where)
        host_kbuild = None
        if machine.arch != host_arch():
            host_kbuild = _host_kbuild(resolved, machine.arch, entry, cache, where)
        return _bootable(
            machine,
            entry,
            entry / "tree",
            resolved.release,
            f"{resolved.image.name} {resolved.image.version}",
            entry / "tree" / "boot" / f"vmlinuz-{resolved.release}",
            cache,
            where,
            host_kbuild=host_kbuild,
        )


def _fetch(resolved: Resolved, apt: Apt, entry: Path, where: str) -> None:
    entry.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=entry, prefix="fetch-") as tmp:
        tree = _unpacked(apt, [resolved.image, *resolved.headers], Path(tmp), entry, where)
        _merge_usr(tree)
        _depmod(tree, resolved.release, where)
        os.replace(tree, entry / "tree")


def _unpacked(apt: Apt, packages: list[Package], tmp: Path, entry: Path, where: str) -> Path:
    """`packages` downloaded into tmp/debs and unpacked together into tmp/tree."""
    debs, tree = tmp / "debs", tmp / "tree"
    debs.mkdir()
    tree.mkdir()
    apt.download(packages, debs)
    for deb in sorted(debs.glob("*.deb")):
        done = subprocess.run(["dpkg-deb", "-x", str(deb), str(tree)], capture_output=True, text=True)
        if done.returncode != 0:
            raise UserError(f"{where}: cannot unpack {deb.name}: {last_line(done.stderr)}; delete {entry}")
    return tree


def _host_kbuild(resolved: Resolved, arch: str, entry: Path, cache: Path, where: str) -> Path | None:
    """This machine's linux-kbuild of the kernel's version, unpacked once into <entry>/kbuild-host."""
    kbuild = next((p for p in resolved.headers if p.name.startswith("linux-kbuild-")), None)
    if kbuild is None:
        return None  # headers that need no kbuild (none of Debian's) build nothing here either
    path = entry / "kbuild-host"
    if (path / "usr" / "lib" / kbuild.name).is_dir():
        return path
    why = f"builds kernel modules for the {arch} kernel {resolved.image.name} {resolved.image.version} here"
    apt = find_host_package(kbuild, where, cache, why)
    with tempfile.TemporaryDirectory(dir=entry, prefix="fetch-") as tmp:
        tree = _unpacked(apt, [kbuild], Path(tmp), entry, where)
        if not (tree / "usr" / "lib" / kbuild.name).is_dir():
            raise UserError(f"{where}: {kbuild} holds no /usr/lib/{kbuild.name}; delete {entry} and retry")
        shutil.rmtree(path, ignore_errors=True)
        os.replace(tree, path)
    return path


def _merge_usr(tree: Path) -> None:
    """Move /lib into /usr/lib when this machine's /lib is a link there (merged /usr): as a layer
    over this root, a real /lib directory would hide the system's libraries."""
    if not os.path.islink("/lib") or os.path.islink(tree / "lib") or not (tree / "lib").is_dir():
        return
    (tree / "usr" / "lib").mkdir(parents=True, exist_ok=True)
    shutil.copytree(tree / "lib", tree / "usr" / "lib", symlinks=True, dirs_exist_ok=True)
    shutil.rmtree(tree / "lib")
    os.symlink("usr/lib", tree / "lib")


def _depmod(tree: Path, release: str, where: str) -> None:
    depmod = shutil.which("depmod") or next(
        (p for p in ("/usr/sbin/depmod", "/sbin/depmod") if os.path.exists(p)), None
    )
    if depmod is None:
        raise UserError(f"{where}: depmod is missing on this machine (apt install kmod)")
    done = subprocess.run([depmod, "-b", str(tree), release], capture_output=True, text=True)
    if done.returncode != 0:
        raise UserError(f"{where}: depmod for {release} failed: {last_line(done.stderr)}")


def _prepare_file(vmlinuz: Path, machine: MachineProfile, where: str, cache: Path) -> Kernel:
    """A kernel file: its modules come from /lib/modules/<release> of this machine, if it has them."""
    form = machine.image.label
    if not vmlinuz.is_file():
        raise UserError(f"{where}: no such file {str(vmlinuz)!r}; give the path of a {form}")
    release = machine.image.release(vmlinuz)
    if release is None:
        raise UserError(f"{where}: {vmlinuz} is not {machine.image.mismatch}; give a vmlinuz file")
    digest = hashlib.sha256(vmlinuz.read_bytes()).hexdigest()[:16]
    entry = cache / "kernels" / f"file-{digest}"
    with locked(cache / "kernels" / f"file-{digest}.lock"):
        (entry / "tree").mkdir(parents=True, exist_ok=True)  # nothing to lay over the root
        return _bootable(machine, entry, Path("/"), release, str(vmlinuz), vmlinuz, cache, where)


def _bootable(
    machine: MachineProfile,
    entry: Path,
    root: Path,
    release: str,
    description: str,
    vmlinuz: Path,
    cache: Path,
    where: str,
    host_kbuild: Path | None = None,
) -> Kernel:
    """The kernel in the form the machine boots fastest and the initramfs, made once per kernel."""
    if not vmlinuz.is_file():
        raise UserError(f"{where}: the package holds no {vmlinuz.name}; delete {entry} and retry")
    image = machine.image.bootable(vmlinuz, root / "boot" / f"config-{release}", entry)
    dtb = machine.dtb_path(root, release)
    if dtb is not None and not dtb.is_file():
        raise UserError(f"{where}: the kernel {release} has no device tree {machine.dtb} for qemu machine "
                        f"{machine.name!r}; delete {entry} and retry")
    if dtb is not None:
        dtb = devicetree.edited(dtb, machine.dt_edits, entry, where)
    init = qemu_initrd.init_program(cache / "init", machine.build)
    # per machine and module list: another profile of the same kernel may need other modules at boot
    modules_digest = hashlib.sha256(" ".join(machine.boot_modules).encode()).hexdigest()[:8]
    initrd = entry / f"initrd-{init.name}-{machine.name}-{modules_digest}.cpio"
    if not initrd.exists():
        modules = qemu_initrd.module_closure(root / "lib" / "modules" / release, machine.boot_modules)
        qemu_initrd.write_initrd(initrd, init, modules)
    tree = entry / "tree" if root == Path("/") else root
    return Kernel(description, release, image, initrd, tree, dtb, host_kbuild)
