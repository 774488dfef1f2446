"""Debian kernels for qemu targets, fetched into a per-user cache and prepared to boot.

The packages of a kernel (apt.py) are fetched once and unpacked with `dpkg-deb -x` into
<cache>/kernels/<image package>_<version>/tree — nothing is installed on this machine. The tree
is the guest's top file-system layer, so /lib/modules/<release> (with `build`), /usr/src/
linux-headers-* and /boot/config-<release> appear in the guest where Debian puts them.

A kernel of another architecture than this machine's (an arm64 board's): its tree's linux-kbuild
holds programs of that architecture (fixdep, modpost), so the entry also gets this machine's own
linux-kbuild of the same version, from the same reading of the archive, unpacked apart in
<entry>/kbuild-host, to build the board's modules here.

When Debian's pool lacks a file its lists name (a mirror mid-sync), the lists are read again and
the next complete set is taken; what was asked for, what was taken and why go with the Kernel.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from jitterlab.cache import user_cache
from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import devicetree
from jitterlab.targets.qemu import initrd as qemu_initrd
from jitterlab.targets.qemu.apt import Resolved, find_kernels
from jitterlab.targets.qemu.apt_state import Apt, Package, PoolMissing, last_line, locked
from jitterlab.targets.qemu.machines.profile import MachineProfile
from jitterlab.targets.qemu.options import KernelSpec


def cache_root() -> Path:
    """The per-user cache (jitterlab/cache.py)."""
    return user_cache()


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
    # a Debian kernel: what the campaign asked for, the packages taken, and why they are not the
    # newest asked for (a set the archive had incomplete, lists that could not be read again)
    asked: str = ""
    packages: tuple[str, ...] = ()
    note: str = ""


# --- the cache -----------------------------------------------------------------------------------


def prepare(spec: KernelSpec, profile: MachineProfile, where: str, cache: Path | None = None) -> Kernel:
    """Fetch (once) and prepare the kernel `spec` names for a guest of `profile`; `where` prefixes errors."""
    cache = cache or cache_root()
    if spec.path is not None:
        return _prepare_file(Path(spec.path), profile, where, cache)
    sets, apt = find_kernels(spec, where, cache, profile.arch.name)
    lacking: list[str] = []
    for reread in (False, True):
        if reread:  # the pool lacked files the lists name: the lists are older than the archive
            sets, apt = find_kernels(spec, where, cache, profile.arch.name, reread=True)
        for found in sets:
            try:
                kernel = _prepare_set(found, apt, profile, cache, where)
            except PoolMissing as e:
                lacking.append(f"{found.description}: {e.said}")
                continue
            notes = [n for n in (found.note, *(f"skipped {why}" for why in lacking), apt.note) if n]
            return replace(kernel, note="; ".join(dict.fromkeys(notes)))
    raise UserError(f"{where}: Debian's pool lacks files of every {spec.metapackage} its lists name, "
                    f"also after reading them again ({'; '.join(dict.fromkeys(lacking))}); the mirror is "
                    "mid-sync: retry in an hour, or set JITTERLAB_DEBIAN_MIRROR to another Debian mirror")


def _prepare_set(found: Resolved, apt: Apt, profile: MachineProfile, cache: Path, where: str) -> Kernel:
    kernels = cache / "kernels"
    entry = kernels / found.key
    with locked(kernels / f"{found.key}.lock"):
        if not (entry / "tree").is_dir():
            _fetch(found, apt, entry, where)
        host_kbuild = None
        if found.host_kbuild is not None:
            host_kbuild = _host_kbuild(found.host_kbuild, apt, entry, where)
        kernel = _bootable(
            profile,
            entry,
            entry / "tree",
            found.release,
            found.description,
            entry / "tree" / "boot" / f"vmlinuz-{found.release}",
            cache,
            where,
            host_kbuild=host_kbuild,
        )
    return replace(kernel, asked=found.asked, packages=tuple(map(str, found.packages)))


def _fetch(found: Resolved, apt: Apt, entry: Path, where: str) -> None:
    entry.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=entry, prefix="fetch-") as tmp:
        tree = _unpacked(apt, [found.image, *found.headers], Path(tmp), entry, where)
        _merge_usr(tree)
        _depmod(tree, found.release, where)
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


def _host_kbuild(kbuild: Package, apt: Apt, entry: Path, where: str) -> Path:
    """This machine's linux-kbuild of the kernel's version, unpacked once into <entry>/kbuild-host
    (the version is recorded there: a set taken later may need another one)."""
    path = entry / "kbuild-host"
    if (path / "usr" / "lib" / kbuild.name).is_dir() and _read(path / "package") == str(kbuild):
        return path
    with tempfile.TemporaryDirectory(dir=entry, prefix="fetch-") as tmp:
        tree = _unpacked(apt, [kbuild], Path(tmp), entry, where)
        if not (tree / "usr" / "lib" / kbuild.name).is_dir():
            raise UserError(f"{where}: {kbuild} holds no /usr/lib/{kbuild.name}; delete {entry} and retry")
        (tree / "package").write_text(str(kbuild))
        shutil.rmtree(path, ignore_errors=True)
        os.replace(tree, path)
    return path


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


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


def _prepare_file(vmlinuz: Path, profile: MachineProfile, where: str, cache: Path) -> Kernel:
    """A kernel file: its modules come from /lib/modules/<release> of this machine, if it has them."""
    form = profile.image.label
    if not vmlinuz.is_file():
        raise UserError(f"{where}: no such file {str(vmlinuz)!r}; give the path of a {form}")
    release = profile.image.release(vmlinuz)
    if release is None:
        raise UserError(f"{where}: {vmlinuz} is not {profile.image.mismatch}; give a vmlinuz file")
    digest = hashlib.sha256(vmlinuz.read_bytes()).hexdigest()[:16]
    entry = cache / "kernels" / f"file-{digest}"
    with locked(cache / "kernels" / f"file-{digest}.lock"):
        (entry / "tree").mkdir(parents=True, exist_ok=True)  # nothing to lay over the root
        return _bootable(profile, entry, Path("/"), release, str(vmlinuz), vmlinuz, cache, where)


def _bootable(
    profile: MachineProfile,
    entry: Path,
    files: Path,  # where the kernel's files are: its unpacked packages, or / for a kernel file here
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
    image = profile.image.bootable(vmlinuz, files / "boot" / f"config-{release}", entry)
    dtb = profile.dtb_path(files, release)
    if dtb is not None and not dtb.is_file():
        raise UserError(f"{where}: the kernel {release} has no device tree {profile.dtb} for qemu machine "
                        f"{profile.name!r}; delete {entry} and retry")
    if dtb is not None:
        dtb = devicetree.edited(dtb, profile.dt_edits, entry, where)
    init = qemu_initrd.init_program(cache / "init", profile.build)
    # per machine and module list: another profile of the same kernel may need other modules at boot
    modules_digest = hashlib.sha256(" ".join(profile.boot_modules).encode()).hexdigest()[:8]
    initrd = entry / f"initrd-{init.name}-{profile.name}-{modules_digest}.cpio"
    if not initrd.exists():
        modules = qemu_initrd.module_closure(files / "lib" / "modules" / release, profile.boot_modules)
        qemu_initrd.write_initrd(initrd, init, modules)
    tree = entry / "tree" if files == Path("/") else files
    return Kernel(description, release, image, initrd, tree, dtb, host_kbuild)
