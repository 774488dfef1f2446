"""An offline install of jitterlab for a device without network: jitterlab's wheel, the wheels of
its runtime dependencies for the device's Python, architecture and C library, and pip's own wheel
(so the device needs python3 only), built on this machine with pip; and, asked for
(--installed-tree), the same wheels already installed here into a tree packed as one archive
(site.tar), so that a slow device only unpacks. The tree is not compressed (see _pack): it makes the
bundle about four times larger (Python 3.11 on x86_64: 846 MB instead of 202 MB), which a lab pays in
every job's download; it pays where the device's CPU is the slow part (an emulated device, a
single-core board: pip took 48-266 s in an emulated x86 guest, unpacking 6.5-8.6 s).

On the device (what jitterlab/lava/run-campaign.sh does with its BUNDLE parameter):

    tar -xf BUNDLE/site.tar -C SITE          # or, a bundle without the tree:
    python3 BUNDLE/pip-*.whl/pip install --no-index --find-links BUNDLE --target SITE jitterlab
    PYTHONPATH=SITE python3 -m jitterlab ...

Only binary wheels are taken for the dependencies (--only-binary=:all:): a device has no compiler
for numpy, and an sdist that builds here would build for this machine, not the device.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.arch import ARCHES
from jitterlab.model.errors import UserError

# the oldest glibc a manylinux wheel names (PEP 600: manylinux_2_5), and the legacy names of PEP 513,
# 571 and 599 for the glibc they stand for
_OLDEST_GLIBC_MINOR = 5
_LEGACY = {5: "manylinux1", 12: "manylinux2010", 17: "manylinux2014"}
_PYTHON = re.compile(r"^3\.(\d{1,2})$")
_GLIBC = re.compile(r"^2\.(\d{1,2})$")
PIP_TIMEOUT_S = 1800.0
RECORD = "bundle.json"
TREE = "site.tar"  # not compressed: see _pack


@dataclass(frozen=True)
class Device:
    """The Python the bundle is for: its version, the machine's `uname -m` and its glibc."""

    python: str  # "3.11"
    machine: str  # "x86_64", "aarch64"
    glibc: str  # "2.36"

    @property
    def abi(self) -> str:
        return "cp" + self.python.replace(".", "")

    def platforms(self) -> list[str]:
        """Every manylinux platform tag a wheel for this device may carry, newest first."""
        minor = int(self.glibc.split(".")[1])
        tags = []
        for m in range(minor, _OLDEST_GLIBC_MINOR - 1, -1):
            tags.append(f"manylinux_2_{m}_{self.machine}")
            if m in _LEGACY:
                tags.append(f"{_LEGACY[m]}_{self.machine}")
        return tags


def machines() -> list[str]:
    """The `uname -m` names jitterlab knows architectures by."""
    return sorted({u for entry in ARCHES for u in entry.obj.uname})


def this_device() -> Device:
    """This machine's Python, architecture and glibc (the defaults of `jitterlab lava-bundle`)."""
    libc, version = platform.libc_ver()
    return Device(f"{sys.version_info.major}.{sys.version_info.minor}", platform.machine(),
                  version if libc == "glibc" else "")


def device(python: str, machine: str, glibc: str) -> Device:
    """A Device from the command's options, each checked (the error names the option)."""
    if not _PYTHON.match(python):
        raise UserError(f"--python: expected the device's Python version like 3.11, got {python!r}")
    if machine not in machines():
        debian = {entry.name: entry.obj.uname[0] for entry in ARCHES if entry.obj.uname}
        hint = f" (Debian's {machine} is --machine {debian[machine]})" if machine in debian else ""
        raise UserError(f"--machine: expected what `uname -m` says on the device ({', '.join(machines())}), "
                        f"got {machine!r}{hint}")
    if not _GLIBC.match(glibc):
        raise UserError(f"--glibc: expected the device's glibc version like 2.36 (`ldd --version` there), "
                        f"got {glibc!r}")
    return Device(python, machine, glibc)


def source_tree(package_dir: Path) -> Path:
    """The checkout jitterlab runs from: its wheel is built from there."""
    root = package_dir.parent
    pyproject = root / "pyproject.toml"
    if not pyproject.is_file() or not re.search(r'(?m)^name = "jitterlab"$', pyproject.read_text()):
        raise UserError(f"--source: jitterlab at {package_dir} is not run from its source checkout (no "
                        "pyproject.toml of jitterlab beside it); give the checkout with --source DIR")
    return root


@dataclass(frozen=True)
class Bundle:
    directory: Path
    wheels: tuple[str, ...]  # file names, sorted
    size_bytes: int
    tar: Path | None
    tree_bytes: int  # the installed tree's archive (TREE); 0: none was asked for


def build(dest: Path, dev: Device, source: Path, tar: Path | None = None, *, tree: bool = False) -> Bundle:
    """Write the bundle into `dest` (made, or an empty directory; a bundle there is replaced) and,
    with `tar`, the same files as a tar archive (the form a LAVA job's overlay takes)."""
    if dest.exists() and not (dest / RECORD).is_file() and any(dest.iterdir()):
        raise UserError(f"DIR: {dest} is a directory with other files than a bundle; give a new or empty one")
    with tempfile.TemporaryDirectory(prefix="lava-bundle-") as tmp:
        work = Path(tmp)
        _pip(["wheel", "--no-deps", "--wheel-dir", str(work), str(source)], "building jitterlab's wheel")
        (wheel,) = work.glob("jitterlab-*.whl")
        _pip(["download", "--only-binary=:all:", "--python-version", dev.python, "--implementation", "cp",
              "--abi", dev.abi, *[a for p in dev.platforms() for a in ("--platform", p)],
              "--dest", str(work), str(wheel), "pip"],
             f"fetching the wheels of jitterlab's dependencies for Python {dev.python} on {dev.machine} "
             f"(glibc {dev.glibc})")
        if dest.exists():
            shutil.rmtree(dest)
        dest.mkdir(parents=True)
        wheels = sorted(p.name for p in work.glob("*.whl"))
        for name in wheels:
            shutil.move(work / name, dest / name)
        if tree:
            _install(dest, dev, work / "site")
            _pack(work / "site", dest / TREE)
    record: dict[str, object] = {"python": dev.python, "machine": dev.machine, "glibc": dev.glibc,
                                 "wheels": {name: _sha256(dest / name) for name in wheels}}
    if tree:
        record["tree"] = {"file": TREE, "sha256": _sha256(dest / TREE), "bytes": (dest / TREE).stat().st_size}
    (dest / RECORD).write_text(json.dumps(record, indent=1) + "\n")
    if tar is not None:
        with tarfile.open(tar, "w") as archive:
            for name in [*wheels, *([TREE] if tree else []), RECORD]:
                archive.add(dest / name, arcname=name)
    return Bundle(dest, tuple(wheels), sum((dest / n).stat().st_size for n in wheels), tar,
                  (dest / TREE).stat().st_size if tree else 0)


def _install(wheels: Path, dev: Device, site: Path) -> None:
    """jitterlab installed from the bundle's wheels into `site` as pip on the device would, for the
    device's Python and platform (pip takes --platform with --target, binary wheels only)."""
    _pip(["install", "--quiet", "--disable-pip-version-check", "--no-index", "--find-links", str(wheels),
          "--no-compile", "--only-binary=:all:", "--python-version", dev.python, "--implementation", "cp",
          "--abi", dev.abi, *[a for p in dev.platforms() for a in ("--platform", p)], "--target", str(site),
          "jitterlab"], "installing the bundle's wheels into the tree the device unpacks")
    # the scripts' #! lines name this machine's Python; the device runs python3 -m jitterlab
    shutil.rmtree(site / "bin", ignore_errors=True)


def _pack(site: Path, archive_path: Path) -> None:
    """The tree as one tar archive, its members owned by root (GNU tar restores owners as root).
    Not compressed: gzip makes Python 3.11's x86_64 tree 198 MB instead of 644 MB, but `tar -xzf`
    takes 3.3 s of CPU where `tar -xf` takes 0.4-1.0 s (a 2-core VM), and the device's CPU is the
    slow part."""
    def owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        return info

    with tarfile.open(archive_path, "w") as archive:
        for entry in sorted(site.iterdir()):
            archive.add(entry, arcname=entry.name, filter=owned_by_root)


def _pip(args: list[str], doing: str) -> None:
    try:
        done = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True,
                              stdin=subprocess.DEVNULL, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise UserError(f"{doing}: pip did not end within {PIP_TIMEOUT_S:.0f} s") from e
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()] or ["(nothing)"]
        if "No module named pip" in done.stderr:
            raise UserError(f"{doing}: pip is not installed for {sys.executable} (python3 -m ensurepip)")
        raise UserError(f"{doing}: pip failed: {said[-1].strip()} (a dependency without a wheel for the "
                        "device needs another --python, --machine or --glibc, or the network is down)")


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
