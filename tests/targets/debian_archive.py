"""A small Debian archive on disk (file:// mirrors) that real apt reads: suites with Packages and
Release files, a pool of real .deb files made with dpkg-deb. Tests give it the skews Debian's
archive really has (a kbuild rebuilt as -3 beside an image -2, a security suite ahead of the
release, a pool that lacks a file its lists name) and assert what jitterlab downloads."""

from __future__ import annotations

import email.utils
import hashlib
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from jitterlab.targets.qemu import apt_state


@dataclass
class Deb:
    name: str
    version: str
    arch: str
    depends: str = ""
    files: dict[str, bytes] = field(default_factory=dict)


class DebianArchive:
    """Two mirrors (debian, debian-security) under `root`; add() packages to suites, publish()."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.suites: dict[tuple[str, str], list[Deb]] = {}  # (mirror, suite) -> packages
        self.pool_missing: set[str] = set()  # file names the pool lacks though the lists name them

    @property
    def mirror(self) -> Path:
        return self.root / "debian"

    @property
    def security(self) -> Path:
        return self.root / "debian-security"

    def add(self, suite: str, *debs: Deb) -> None:
        mirror = "debian-security" if suite.endswith("-security") else "debian"
        self.suites.setdefault((mirror, suite), []).extend(debs)

    def kernel(self, suite: str, arch: str, abi: str, version: str, *, kbuild: str | None = None,
               flavour: str = "", skip: tuple[str, ...] = ()) -> None:
        """Debian's packages of one kernel build: metapackage, image, headers, -common, kbuild
        (`kbuild`: its version when it differs, as when Debian rebuilt it alone); `skip`: names
        (image, headers, common, kbuild) to leave out of this suite."""
        f = f"{flavour}-{arch}" if flavour else arch
        common = f"linux-headers-{abi}-common" + ("-rt" if flavour == "rt" else "")
        release = f"{abi}-{f}"
        vmlinuz = bytearray(64)
        vmlinuz[56:60] = b"ARMd"
        debs = {
            "meta": Deb(f"linux-image-{f}", version, arch, f"linux-image-{release} (= {version})"),
            "image": Deb(f"linux-image-{release}", version, arch, "kmod",
                         {f"boot/vmlinuz-{release}": bytes(vmlinuz) + f"Linux version {release} (d)".encode(),
                          f"boot/config-{release}": b"CONFIG_X=y\n",
                          f"lib/modules/{release}/kernel/virtio_mmio.ko": b"ko"}),
            "headers": Deb(f"linux-headers-{release}", version, arch,
                           f"{common} (= {version}), linux-kbuild-6.1 (>= {version}), "
                           "linux-compiler-gcc-12-x86",
                           {f"usr/src/linux-headers-{release}/Makefile": b"all:\n"}),
            "common": Deb(common, version, "all", "", {f"usr/src/{common}/Kbuild": b""}),
            "kbuild": Deb("linux-kbuild-6.1", kbuild or version, arch, "",
                          {"usr/lib/linux-kbuild-6.1/scripts/basic/fixdep": arch.encode()}),
        }
        self.add(suite, *(deb for key, deb in debs.items() if key not in skip))

    def publish(self) -> None:
        """Write the pool, Packages and Release files of every suite."""
        for (mirror, suite), debs in self.suites.items():
            archs = sorted({d.arch for d in debs if d.arch != "all"} | {"amd64", "arm64", "armhf"})
            for arch in archs:
                stanzas = [self._stanza(mirror, d) for d in debs if d.arch in (arch, "all")]
                index = self.root / mirror / "dists" / suite / "main" / f"binary-{arch}" / "Packages"
                index.parent.mkdir(parents=True, exist_ok=True)
                index.write_text("\n".join(stanzas))
            self._release(self.root / mirror / "dists" / suite, suite, archs)

    def _stanza(self, mirror: str, deb: Deb) -> str:
        filename = f"pool/main/l/linux/{deb.name}_{deb.version}_{deb.arch}.deb"
        path = self.root / mirror / filename
        if not path.exists():
            _build_deb(deb, path)
        data = path.read_bytes()
        if path.name in self.pool_missing:
            path.unlink()
        lines = [f"Package: {deb.name}", f"Version: {deb.version}", f"Architecture: {deb.arch}",
                 "Maintainer: t <t@example.org>", f"Filename: {filename}", f"Size: {len(data)}",
                 f"SHA256: {hashlib.sha256(data).hexdigest()}", "Description: t"]
        if deb.depends:
            lines.insert(3, f"Depends: {deb.depends}")
        return "\n".join(lines) + "\n"

    def _release(self, dists: Path, suite: str, archs: list[str]) -> None:
        entries = []
        for path in sorted(dists.rglob("Packages")):
            data = path.read_bytes()
            entries.append(f" {hashlib.sha256(data).hexdigest()} {len(data)} {path.relative_to(dists)}")
        date = email.utils.formatdate(usegmt=True)
        (dists / "Release").write_text(
            f"Suite: {suite}\nCodename: {suite}\nDate: {date}\nArchitectures: {' '.join(archs)}\n"
            "Components: main\n"
            "SHA256:\n" + "\n".join(entries) + "\n"
        )

    def mid_sync(self, suite: str, *debs: Deb) -> None:
        """Publish `debs` into `suite` as a mirror mid-sync does: its Release names the new index,
        whose file still holds the old one (apt's reading of it then fails)."""
        mirror = "debian-security" if suite.endswith("-security") else "debian"
        indexes = list((self.root / mirror / "dists" / suite).rglob("Packages"))
        old = {path: path.read_bytes() for path in indexes}
        self.add(suite, *debs)
        self.publish()
        for path, data in old.items():
            path.write_bytes(data)

    def source(self) -> apt_state.Archive:
        return apt_state.Archive(f"file:{self.mirror}", f"file:{self.security}", keyring=None)


def _build_deb(deb: Deb, out: Path) -> None:
    tree = out.parent / f".{out.name}.tree"
    for name, data in deb.files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_bytes(data)
    (tree / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (tree / "DEBIAN" / "control").write_text(
        f"Package: {deb.name}\nVersion: {deb.version}\nArchitecture: {deb.arch}\n"
        "Maintainer: t <t@example.org>\nDescription: t\n"
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["dpkg-deb", "-Zgzip", "-b", str(tree), str(out)], check=True, capture_output=True)
