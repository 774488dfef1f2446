"""Kernels of another CPU architecture than this machine's: jitterlab's own apt state for that
architecture, the answers remembered per architecture, the message for a package Debian lacks there,
and this machine's linux-kbuild beside the foreign tree. apt is faked (a fake PATH, or Apt.cache)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import apt as qemu_apt
from jitterlab.targets.qemu import apt_state
from jitterlab.targets.qemu import kernels as qemu_kernels
from jitterlab.targets.qemu.apt_state import Apt, Package
from jitterlab.targets.qemu.machines.arm_image import ArmImage
from jitterlab.targets.qemu.machines.pc import PC
from jitterlab.targets.qemu.machines.profile import VIRTIO_MMIO, MachineProfile
from jitterlab.targets.qemu.options import KernelSpec

WHERE = "campaign.toml: target[1].kernel"


def _board(arch: str = "arm64", kernels: dict[str, str] | None = None) -> MachineProfile:
    return MachineProfile(
        name="board", arch=arch, qemu="qemu-system-aarch64", qemu_package="qemu-system-arm",
        machine=("-machine", "virt"), accel={"tcg": ("-accel", "tcg", "-cpu", "cortex-a53")},
        console="ttyAMA0", image=ArmImage(),
        kernels=kernels or {"standard": "linux-image-arm64", "rt": "linux-image-rt-arm64"},
        devices=VIRTIO_MMIO, build=PC.build, cpus=1,
    )


def _spec(flavour: str, metapackage: str, version: str | None = None) -> KernelSpec:
    return KernelSpec(version or flavour, metapackage=metapackage, version=version, flavour=flavour)


# --- the state: options, sources, when it is read -------------------------------------------------


def _fake_apt_get(tmp_path: Path, monkeypatch, script: str) -> Path:
    """apt-get on PATH is `script` (sh); its argv goes to the returned log, one call per line."""
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    log = tmp_path / "apt-get.log"
    fake = bindir / "apt-get"
    fake.write_text(f'#!/bin/sh\necho "$*" >> {log}\n{script}\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setattr(apt_state, "os_release", lambda: {"VERSION_CODENAME": "bookworm"})
    return log


def test_a_foreign_state_is_apts_own_for_that_architecture_and_read_once_a_day(tmp_path, monkeypatch):
    state = tmp_path / "apt-arm64"
    apt = Apt("t", state, "arm64")
    options = " ".join(apt.options)
    for option in ("APT::Architecture=arm64", "APT::Architectures=arm64", "Dir::State::status=/dev/null",
                   f"Dir::Etc::SourceList={state}/sources.list", f"Dir::State::Lists={state}/lists",
                   f"Dir::Cache={state}/cache", "Dir::Etc::SourceParts=/nonexistent"):
        assert f"-o {option}" in options
    assert "APT::Architecture" not in " ".join(Apt("t", tmp_path / "apt-backports").options)
    assert "Dir::" not in " ".join(Apt("t").options)  # this machine's configuration, untouched

    log = _fake_apt_get(tmp_path, monkeypatch, "exit 0")
    apt.refresh()
    assert (state / "sources.list").read_text().splitlines() == [
        f"deb [signed-by={apt_state.KEYRING}] http://deb.debian.org/debian {suite} main"
        for suite in ("bookworm", "bookworm-updates")
    ] + [
        f"deb [signed-by={apt_state.KEYRING}] http://deb.debian.org/debian-security bookworm-security main",
        f"deb [signed-by={apt_state.KEYRING}] http://deb.debian.org/debian bookworm-backports main",
    ]
    calls = log.read_text().splitlines()
    assert len(calls) == 1 and calls[0].endswith("-qq update") and "APT::Architectures=arm64" in calls[0]
    apt.refresh()  # fresh: not read again
    assert len(log.read_text().splitlines()) == 1
    two_days_ago = time.time() - 2 * 86400
    os.utime(state / "updated", (two_days_ago, two_days_ago))
    apt.refresh()
    assert len(log.read_text().splitlines()) == 2


def test_a_mirror_that_fails_is_one_line_unless_earlier_lists_can_be_used(tmp_path, monkeypatch):
    log = _fake_apt_get(tmp_path, monkeypatch, (
        "echo 'E: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/"
        "binary-arm64/Packages.xz  File has unexpected size (1 != 2). Mirror sync in progress? "
        "[IP: 192.0.2.1 80]' >&2\n"
        "echo 'E: Some index files failed to download. They have been ignored.' >&2\n"
        "exit 100"
    ))
    state = tmp_path / "apt-arm64"
    apt = Apt("t", state, "arm64")
    with pytest.raises(UserError) as e:
        apt.refresh()
    assert str(e.value) == (
        f"t: reading Debian bookworm bookworm-updates bookworm-security bookworm-backports into {state} "
        "failed: E: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/"
        "binary-arm64/Packages.xz File has unexpected size (1 != 2). Mirror sync in progress?; check the "
        "network, or retry when the mirror has synced"
    )
    with pytest.raises(UserError):
        apt.refresh()  # nothing to use: read again at once, and refused again
    assert len(log.read_text().splitlines()) == 2
    # the release's lists were read once, the security suite's not: the state is used as it is,
    # and not read again for a while
    (state / "lists" / "deb.debian.org_debian_dists_bookworm_main_binary-arm64_Packages").write_text("")
    an_hour_ago = time.time() - 3600
    os.utime(state / "tried", (an_hour_ago, an_hour_ago))
    apt.refresh()
    apt.refresh()
    assert len(log.read_text().splitlines()) == 3
    assert not (state / "updated").exists()


# --- resolving: remembered per architecture, what Debian lacks ---------------------------------------


def _policy(package: str, versions: list[tuple[str, int]]) -> str:
    lines = [f"{package}:", "  Installed: (none)", f"  Candidate: {max(versions, key=lambda v: v[1])[0]}",
             "  Version table:"]
    for version, priority in versions:
        lines += [f"     {version} {priority}", f"        {priority} http://deb.debian.org/debian x Packages"]
    return "\n".join(lines) + "\n"


# per architecture: metapackage -> [(version, priority)], and the image it depends on per version
ARCHIVE = {
    "arm64": {"linux-image-arm64": [("6.12.95-1~bpo12+1", 100), ("6.1.192-2", 500)],
              "linux-image-rt-arm64": [("6.1.192-2", 500)]},
    "armhf": {"linux-image-armmp": [("6.1.192-2", 500)], "linux-image-rt-armmp": [("6.1.192-2", 500)],
              "linux-image-armmp-lpae": [("6.1.192-2", 500)]},
}


class FakeApt:
    """apt-cache answers of each architecture's archive; counts the questions."""

    def __init__(self) -> None:
        self.asked: list[tuple[str | None, list[str]]] = []

    def __call__(self, apt: Apt, args: list[str]) -> str:
        self.asked.append((apt.arch, args))
        archive = ARCHIVE.get(apt.arch or "amd64", {})
        verb, name = args
        if verb == "policy":
            return _policy(name, archive[name]) if name in archive else ""
        if verb == "pkgnames":
            return "\n".join([*archive, "linux-image-6.1.0-56-armmp", "linux-image-armmp-dbg"]) + "\n"
        package, _, version = name.partition("=")
        flavour = package.removeprefix("linux-image-").removeprefix("linux-headers-")
        release = ("6.12.95+deb12" if "bpo" in version else "6.1.0-56") + "-" + flavour
        if package in archive:
            return f"Package: {package}\nDepends: linux-image-{release} (= {version})\n"
        if package.startswith("linux-headers-"):
            kbuild = "6.12.95+deb12" if "bpo" in version else "6.1"
            return (f"Package: {package}\nDepends: linux-headers-6.1.0-56-common (= {version}), "
                    f"linux-kbuild-{kbuild} (>= {version})\n")
        if package.startswith("linux-kbuild-"):  # every architecture's lists have kbuild
            return f"Package: {package}\nVersion: {version}\n"
        return ""


@pytest.fixture
def fake_apt(monkeypatch) -> FakeApt:
    fake = FakeApt()
    monkeypatch.setattr(Apt, "cache", lambda self, args: fake(self, args))
    monkeypatch.setattr(Apt, "refresh", lambda self: None)
    monkeypatch.setattr(qemu_apt, "host_arch", lambda: "amd64")
    return fake


def test_a_foreign_kernel_is_resolved_on_its_architectures_state_and_remembered_per_architecture(
    tmp_path, fake_apt
):
    found, apt = qemu_apt.find_packages(_spec("standard", "linux-image-arm64"), WHERE, tmp_path, "arm64")
    assert (apt.state, apt.arch) == (tmp_path / "apt-arm64", "arm64")
    assert str(found.image) == "linux-image-6.1.0-56-arm64=6.1.192-2" and not found.backports
    assert [str(p) for p in found.headers] == ["linux-headers-6.1.0-56-arm64=6.1.192-2",
                                                "linux-headers-6.1.0-56-common=6.1.192-2",
                                                "linux-kbuild-6.1=6.1.192-2"]
    assert {arch for arch, _ in fake_apt.asked} == {"arm64"}  # never this machine's lists

    asked = len(fake_apt.asked)
    again, apt = qemu_apt.find_packages(_spec("standard", "linux-image-arm64"), WHERE, tmp_path, "arm64")
    assert again == found and apt.arch == "arm64" and len(fake_apt.asked) == asked  # remembered
    # the same metapackage of another architecture is not that answer
    ARCHIVE["armhf"]["linux-image-arm64"] = [("6.1.176-1", 500)]
    try:
        other, apt = qemu_apt.find_packages(_spec("standard", "linux-image-arm64"), WHERE, tmp_path, "armhf")
    finally:
        del ARCHIVE["armhf"]["linux-image-arm64"]
    assert other.image.version == "6.1.176-1" and apt.arch == "armhf"
    memo = json.loads((tmp_path / "kernels" / "resolved.json").read_text())
    assert sorted(memo) == ["arm64 linux-image-arm64 candidate", "armhf linux-image-arm64 candidate"]

    bpo, _ = qemu_apt.find_packages(_spec("standard", "linux-image-arm64", "6.12"), WHERE, tmp_path, "arm64")
    assert str(bpo.image) == "linux-image-6.12.95+deb12-arm64=6.12.95-1~bpo12+1" and bpo.backports


def test_a_kernel_debian_lacks_for_that_architecture_is_one_line_with_what_exists(tmp_path, fake_apt):
    with pytest.raises(UserError) as e:
        qemu_apt.find_packages(_spec("rt", "linux-image-rt-armhf"), WHERE, tmp_path, "armhf")
    assert str(e.value) == (
        'campaign.toml: target[1].kernel = "rt": Debian has no linux-image-rt-armhf for armhf; its armhf '
        "kernels are linux-image-armmp, linux-image-armmp-lpae, linux-image-rt-armmp; name a kernel that "
        "Debian has"
    )
    with pytest.raises(UserError, match=r"no linux-image-armmp 5.10.x in Debian .* for armhf; "
                                        r"versions offered: 6.1.192$"):
        qemu_apt.find_packages(_spec("standard", "linux-image-armmp", "5.10"), WHERE, tmp_path, "armhf")


# --- the fetched entry: the foreign tree and this machine's kbuild beside it ------------------------


def _deb(tmp_path: Path, package: Package, files: dict[str, bytes], arch: str) -> Path:
    root = tmp_path / "debroot" / f"{package.name}-{arch}"
    for name, data in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "DEBIAN").mkdir(parents=True, exist_ok=True)
    (root / "DEBIAN" / "control").write_text(
        f"Package: {package.name}\nVersion: {package.version}\nArchitecture: {arch}\n"
        "Maintainer: t <t@example.org>\nDescription: t\n"
    )
    out = tmp_path / "debroot" / f"{package.name}_{arch}.deb"
    subprocess.run(["dpkg-deb", "-Zgzip", "-b", str(root), str(out)], check=True, capture_output=True)
    return out


HAS_DEBIAN_TOOLS = shutil.which("dpkg-deb") is not None and any(
    shutil.which(p) or os.path.exists(p) for p in ("depmod", "/usr/sbin/depmod", "/sbin/depmod")
)


@pytest.mark.skipif(not HAS_DEBIAN_TOOLS, reason="needs dpkg-deb and depmod")
def test_a_foreign_kernel_gets_this_machines_kbuild_of_its_version_beside_its_tree(
    tmp_path, fake_apt, monkeypatch
):
    release = "6.1.0-56-arm64"
    image = bytearray(64)
    image[56:60] = b"ARMd"
    downloads: list[tuple[str | None, list[str]]] = []

    def download(self: Apt, packages: list[Package], into: Path) -> None:
        downloads.append((self.arch, [str(p) for p in packages]))
        arch = self.arch or "amd64"
        for p in packages:
            files = {f"usr/lib/{p.name}/scripts/basic/fixdep": arch.encode()}
            if p.name.startswith("linux-image-"):
                files = {f"boot/vmlinuz-{release}": bytes(image) + f"Linux version {release} (d)".encode(),
                         f"lib/modules/{release}/kernel/virtio_mmio.ko": b"ko"}
            shutil.copy(_deb(tmp_path, p, files, arch), into)

    monkeypatch.setattr(Apt, "download", download)
    init = tmp_path / "init-x"
    init.write_bytes(b"init")
    monkeypatch.setattr(qemu_kernels.qemu_initrd, "init_program", lambda cache, build: init)
    monkeypatch.setattr(qemu_kernels, "host_arch", lambda: "amd64")
    cache = tmp_path / "cache"

    kernel = qemu_kernels.prepare(_spec("standard", "linux-image-arm64"), _board(), WHERE, cache)
    entry = cache / "kernels" / "linux-image-6.1.0-56-arm64_6.1.192-2"
    assert kernel.tree == entry / "tree" and kernel.release == release
    assert kernel.host_kbuild == entry / "kbuild-host"
    host_fixdep = kernel.host_kbuild / "usr" / "lib" / "linux-kbuild-6.1" / "scripts" / "basic" / "fixdep"
    assert host_fixdep.read_bytes() == b"amd64"
    tree_kbuild = kernel.tree / "usr" / "lib" / "linux-kbuild-6.1" / "scripts" / "basic" / "fixdep"
    assert tree_kbuild.read_bytes() == b"arm64"
    assert downloads == [
        ("arm64", ["linux-image-6.1.0-56-arm64=6.1.192-2", "linux-headers-6.1.0-56-arm64=6.1.192-2",
                   "linux-headers-6.1.0-56-common=6.1.192-2", "linux-kbuild-6.1=6.1.192-2"]),
        (None, ["linux-kbuild-6.1=6.1.192-2"]),  # this machine's lists, its own architecture
    ]
    assert ArmImage().release(kernel.image) == release
    # once there, nothing is fetched again; a kernel of this machine's architecture has no host_kbuild
    assert qemu_kernels.prepare(_spec("standard", "linux-image-arm64"), _board(), WHERE, cache) == kernel
    assert len(downloads) == 2
    assert qemu_kernels.Kernel("k", "r", Path("i"), Path("i"), Path("t")).host_kbuild is None


def test_this_machines_kbuild_missing_from_its_lists_is_one_line_with_the_fix(tmp_path, monkeypatch):
    monkeypatch.setattr(Apt, "cache", lambda self, args: "")
    monkeypatch.setattr(qemu_apt, "host_arch", lambda: "amd64")
    with pytest.raises(UserError) as e:
        qemu_apt.find_host_package(Package("linux-kbuild-6.1", "6.1.192-2"), "t", tmp_path, "builds modules")
    assert str(e.value) == ("t: this machine's apt lists have no linux-kbuild-6.1 6.1.192-2 for amd64, which "
                            "builds modules; run apt-get update (as root) and retry")
