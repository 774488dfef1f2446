"""Debian kernels as apt's own rules resolve them, against a real apt reading a small Debian archive
on disk (tests/targets/debian_archive.py) that has the skews Debian's archive has: a kbuild rebuilt
as -3 beside an image -2, a security suite ahead of the release, a pool that lacks a file its lists
name, a mirror that fails. Asserted: what gets downloaded, what the kernel's record says."""

from __future__ import annotations

import os
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from jitterlab.model.arch import ARCHES
from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import apt as qemu_apt
from jitterlab.targets.qemu import apt_state
from jitterlab.targets.qemu import kernels as qemu_kernels
from jitterlab.targets.qemu.apt_state import Apt
from jitterlab.targets.qemu.machines.arm_image import ArmImage
from jitterlab.targets.qemu.machines.profile import VIRTIO_MMIO, MachineProfile
from jitterlab.targets.qemu.options import KernelSpec
from tests.targets.debian_archive import Deb, DebianArchive

WHERE = "campaign.toml: target[1].kernel"
HAS_DEBIAN_TOOLS = all(shutil.which(t) for t in ("apt-get", "apt-cache", "dpkg-deb")) and any(
    shutil.which(p) or os.path.exists(p) for p in ("depmod", "/usr/sbin/depmod", "/sbin/depmod")
)
pytestmark = pytest.mark.skipif(not HAS_DEBIAN_TOOLS, reason="needs apt, dpkg-deb and depmod")


def _board(arch: str = "arm64") -> MachineProfile:
    return MachineProfile(
        name="board", arch=ARCHES.get(arch, "test"),
        machine_args=("-machine", "virt"), accel={"tcg": ("-accel", "tcg", "-cpu", "cortex-a53")},
        console="ttyAMA0", image=ArmImage(), devices=VIRTIO_MMIO, cpus=1,
    )


def _spec(metapackage: str, version: str | None = None, flavour: str = "standard") -> KernelSpec:
    return KernelSpec(version or flavour, metapackage=metapackage, version=version, flavour=flavour)


@pytest.fixture
def archive(tmp_path, monkeypatch) -> DebianArchive:
    """An archive of bookworm, -updates, -security and -backports, read by jitterlab's apt states."""
    made = DebianArchive(tmp_path / "archive")
    monkeypatch.setattr(apt_state, "archive", made.source)
    monkeypatch.setattr(apt_state, "os_release", lambda: {"VERSION_CODENAME": "bookworm"})
    monkeypatch.setattr(qemu_apt, "host_arch", lambda: "amd64")
    init = tmp_path / "init-x"
    init.write_bytes(b"init")
    monkeypatch.setattr(qemu_kernels.qemu_initrd, "init_program", lambda cache, build: init)
    for suite in ("bookworm", "bookworm-updates", "bookworm-security", "bookworm-backports"):
        made.add(suite)
    return made


def _prepare(tmp_path: Path, arch: str = "amd64", meta: str = "linux-image-amd64",
             **spec) -> qemu_kernels.Kernel:
    return qemu_kernels.prepare(_spec(meta, **spec), _board(arch), WHERE, tmp_path / "cache")


def _fixdep(tree: Path) -> bytes:
    return (tree / "usr" / "lib" / "linux-kbuild-6.1" / "scripts" / "basic" / "fixdep").read_bytes()


# --- relations, as dpkg compares versions ----------------------------------------------------------


@pytest.mark.parametrize(("version", "relation", "holds"), [
    ("6.1.192-3", (">=", "6.1.192-2"), True), ("6.1.192-2", (">=", "6.1.192-2"), True),
    ("6.1.176-1", (">=", "6.1.192-2"), False), ("6.1.192-3", ("=", "6.1.192-2"), False),
    ("6.1.192-2", ("<=", "6.1.192-2"), True), ("6.1.192-3", ("<<", "6.1.192-3"), False),
    ("6.1.192-2", ("<<", "6.1.192-3"), True), ("6.1.192-3", (">>", "6.1.192-2"), True),
    ("6.12.95-1~bpo12+1", (">=", "6.12.95-1"), False),  # ~ sorts before everything
    ("1:6.1-1", (">>", "7.0-1"), True),  # the epoch first
    ("6.1.192-2", None, True),
])  # fmt: skip
def test_relations_hold_as_dpkg_says(version, relation, holds):
    assert qemu_apt.satisfies(version, relation) is holds


# --- the archive's skews ------------------------------------------------------------------------------


def test_a_kbuild_rebuilt_alone_serves_headers_that_ask_for_at_least_their_version(tmp_path, archive):
    # Debian today: the security suite has image and headers 6.1.192-2 and linux-kbuild-6.1 6.1.192-3
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.kernel("bookworm-security", "amd64", "6.1.0-56", "6.1.192-2", kbuild="6.1.192-3")
    archive.publish()
    kernel = _prepare(tmp_path)
    assert kernel.packages == (
        "linux-image-6.1.0-56-amd64=6.1.192-2", "linux-headers-6.1.0-56-amd64=6.1.192-2",
        "linux-headers-6.1.0-56-common=6.1.192-2", "linux-kbuild-6.1=6.1.192-3",
    )
    assert kernel.release == "6.1.0-56-amd64" and kernel.note == ""
    assert kernel.asked == "linux-image-amd64 (candidate)"
    assert kernel.description == "linux-image-6.1.0-56-amd64 6.1.192-2"
    assert _fixdep(kernel.tree) == b"amd64" and kernel.host_kbuild is None


def test_a_security_suite_ahead_of_its_headers_falls_back_to_the_newest_complete_set_and_says_why(
    tmp_path, archive
):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.kernel("bookworm-security", "amd64", "6.1.0-56", "6.1.192-2", skip=("headers",))
    archive.publish()
    kernel = _prepare(tmp_path)
    assert kernel.description == "linux-image-6.1.0-50-amd64 6.1.176-1"
    assert kernel.note == (
        "linux-image-amd64 6.1.192-2 has no complete set of packages (6.1.192-2: no "
        "linux-headers-6.1.0-56-amd64 (= 6.1.192-2) (the lists hold: none)); took 6.1.176-1"
    )
    # as apt would install it: the newest kbuild that meets the headers' ">= 6.1.176-1"
    assert "linux-kbuild-6.1=6.1.192-2" in kernel.packages


def test_a_pool_that_lacks_a_file_its_lists_name_is_read_again_then_the_next_set_is_taken(
    tmp_path, archive
):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.kernel("bookworm-security", "amd64", "6.1.0-56", "6.1.192-2", kbuild="6.1.192-3")
    archive.pool_missing.add("linux-kbuild-6.1_6.1.192-3_amd64.deb")
    archive.publish()
    kernel = _prepare(tmp_path)
    assert kernel.description == "linux-image-6.1.0-50-amd64 6.1.176-1"
    assert kernel.note.startswith("skipped linux-image-6.1.0-56-amd64 6.1.192-2: E: Failed to fetch ")
    assert "linux-kbuild-6.1_6.1.192-3_amd64.deb" in kernel.note
    # nothing of the set that could not be fetched is kept
    assert not (tmp_path / "cache" / "kernels" / "linux-image-6.1.0-56-amd64_6.1.192-2" / "tree").exists()


def test_a_pool_that_lacks_every_set_is_one_line_with_a_remedy_that_works(tmp_path, archive):
    archive.kernel("bookworm-security", "amd64", "6.1.0-56", "6.1.192-2", kbuild="6.1.192-3")
    archive.pool_missing.add("linux-kbuild-6.1_6.1.192-3_amd64.deb")
    archive.publish()
    with pytest.raises(UserError) as e:
        _prepare(tmp_path)
    message = str(e.value)
    assert message.startswith(f"{WHERE}: Debian's pool lacks files of every linux-image-amd64 its lists "
                              "name, also after reading them again (linux-image-6.1.0-56-amd64 6.1.192-2: ")
    assert message.endswith("the mirror is mid-sync: retry in an hour, or set JITTERLAB_DEBIAN_MIRROR to "
                            "another Debian mirror")
    assert "\n" not in message


def test_no_complete_set_at_all_names_what_each_version_lacks(tmp_path, archive):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1", skip=("kbuild",))
    archive.publish()
    lacking = (r"^campaign.toml: target\[1\].kernel: no version of linux-image-amd64 has all its packages in "
               r"Debian's lists \(6.1.176-1: no linux-kbuild-6.1 \(>= 6.1.176-1\) \(the lists hold: none\)\);"
               " retry when")
    with pytest.raises(UserError, match=lacking):
        _prepare(tmp_path)


def test_a_version_is_the_newest_of_its_series_backports_included(tmp_path, archive):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.kernel("bookworm-backports", "amd64", "6.12.95+deb12", "6.12.95-1~bpo12+1")
    archive.publish()
    assert _prepare(tmp_path).description == "linux-image-6.1.0-50-amd64 6.1.176-1"  # never backports
    bpo = _prepare(tmp_path, version="6.12")
    assert bpo.description == "linux-image-6.12.95+deb12-amd64 6.12.95-1~bpo12+1"
    assert bpo.asked == "linux-image-amd64 6.12.x"
    with pytest.raises(UserError, match=r"no linux-image-amd64 5.10.x in Debian bookworm or its backports "
                                        r"for amd64; versions offered: 6.12.95, 6.1.176$"):
        _prepare(tmp_path, version="5.10")


# --- a kernel of another architecture --------------------------------------------------------------


def test_a_foreign_kernel_gets_this_machines_kbuild_from_the_same_reading_of_the_archive(tmp_path, archive):
    for arch in ("arm64", "amd64"):  # Debian builds every architecture from one upload
        archive.kernel("bookworm", arch, "6.1.0-50", "6.1.176-1")
        archive.kernel("bookworm-security", arch, "6.1.0-56", "6.1.192-2", kbuild="6.1.192-3")
    archive.publish()
    kernel = _prepare(tmp_path, "arm64", "linux-image-arm64")
    assert kernel.packages == (
        "linux-image-6.1.0-56-arm64=6.1.192-2", "linux-headers-6.1.0-56-arm64=6.1.192-2",
        "linux-headers-6.1.0-56-common=6.1.192-2", "linux-kbuild-6.1=6.1.192-3",
        "linux-kbuild-6.1:amd64=6.1.192-3",
    )
    entry = tmp_path / "cache" / "kernels" / "linux-image-6.1.0-56-arm64_6.1.192-2"
    assert kernel.tree == entry / "tree" and kernel.host_kbuild == entry / "kbuild-host"
    assert _fixdep(kernel.tree) == b"arm64" and _fixdep(kernel.host_kbuild) == b"amd64"
    assert ArmImage().release(kernel.image) == "6.1.0-56-arm64"
    # one state for both architectures; this machine's own apt lists were never read
    assert sorted(p.name for p in (tmp_path / "cache").glob("apt-*")) == ["apt-arm64"]
    assert qemu_kernels.prepare(_spec("linux-image-arm64"), _board(), WHERE, tmp_path / "cache") == kernel


def test_a_foreign_set_whose_kbuild_this_machine_lacks_is_incomplete(tmp_path, archive):
    archive.kernel("bookworm", "arm64", "6.1.0-50", "6.1.176-1")
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    # the arm64 build reached the security suite, the amd64 one not yet
    archive.kernel("bookworm-security", "arm64", "6.1.0-56", "6.1.192-2", kbuild="6.1.192-3")
    archive.publish()
    kernel = _prepare(tmp_path, "arm64", "linux-image-arm64")
    assert kernel.description == "linux-image-6.1.0-50-arm64 6.1.176-1"
    assert "no linux-kbuild-6.1 6.1.192 for amd64 (this machine), which builds the kernel's modules here " \
           "(the lists hold: 6.1.176-1)" in kernel.note


def test_a_flavour_debian_lacks_for_that_architecture_names_those_it_has(tmp_path, archive):
    archive.kernel("bookworm", "armhf", "6.1.0-50", "6.1.176-1", flavour="")
    archive.kernel("bookworm", "armhf", "6.1.0-50", "6.1.176-1", flavour="rt")
    archive.publish()
    with pytest.raises(UserError) as e:
        _prepare(tmp_path, "armhf", "linux-image-rt-armmp", flavour="rt")
    assert str(e.value) == (
        f'{WHERE} = "rt": Debian has no linux-image-rt-armmp for armhf; its armhf kernels are '
        "linux-image-armhf, linux-image-rt-armhf; name a kernel that Debian has"
    )


# --- the state: read when, and what a failed reading leaves ---------------------------------------------


def test_the_state_is_read_once_a_day_and_again_when_its_sources_change(tmp_path, archive, monkeypatch):
    archive.kernel("bookworm", "arm64", "6.1.0-50", "6.1.176-1")
    archive.publish()
    apt = Apt("t", tmp_path / "apt-arm64", "arm64", "amd64")
    apt.refresh()
    sources = (tmp_path / "apt-arm64" / "sources.list").read_text().splitlines()
    assert sources == ["# architectures arm64 amd64"] + [
        f"deb [trusted=yes] file:{archive.root}/{mirror} {suite} main"
        for mirror, suite in (("debian", "bookworm"), ("debian", "bookworm-updates"),
                              ("debian-security", "bookworm-security"), ("debian", "bookworm-backports"))
    ]
    assert (tmp_path / "apt-arm64" / "cache" / "pkgcache.bin").is_file()  # apt-cache answers fast
    stamp = apt.stamp()
    apt.refresh()
    assert apt.stamp() == stamp  # fresh: not read again
    two_days_ago = time.time() - 2 * 86400
    os.utime(tmp_path / "apt-arm64" / "updated", (two_days_ago, two_days_ago))
    apt.refresh()
    assert apt.stamp() != stamp
    stamp = apt.stamp()
    moved = DebianArchive(tmp_path / "mirror2")
    for suite in ("bookworm", "bookworm-updates", "bookworm-security", "bookworm-backports"):
        moved.add(suite)
    moved.publish()
    monkeypatch.setattr(apt_state, "archive", moved.source)  # JITTERLAB_DEBIAN_MIRROR changed
    apt.refresh()
    assert apt.stamp() != stamp and str(moved.root) in (tmp_path / "apt-arm64" / "sources.list").read_text()


def test_a_mirror_that_fails_is_one_line_and_old_lists_in_use_are_said(tmp_path, archive, monkeypatch):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.publish()
    _prepare(tmp_path)
    # the next day the security suite is mid-sync: its Release names an index its mirror lacks
    archive.mid_sync("bookworm-security", Deb("linux-image-amd64", "6.1.192-2", "amd64"))
    state = tmp_path / "cache" / "apt-amd64"
    old = time.time() - 2 * 86400
    os.utime(state / "updated", (old, old))
    kernel = _prepare(tmp_path)
    assert kernel.description == "linux-image-6.1.0-50-amd64 6.1.176-1"
    assert kernel.note.startswith(f"reading Debian bookworm bookworm-updates bookworm-security "
                                  f"bookworm-backports into {state} failed: E: ")
    assert "the lists read " in kernel.note and kernel.note.endswith("were used where no newer could be read")
    # nothing usable at all (a mirror that is not there): one line naming the failure and the fix
    shutil.rmtree(state)
    gone = apt_state.Archive(f"file:{tmp_path}/gone/debian", f"file:{tmp_path}/gone/debian-security", None)
    monkeypatch.setattr(apt_state, "archive", lambda: gone)
    failed = rf"^{re.escape(WHERE)}: reading Debian .* into {state} failed: E: .*; check the network"
    with pytest.raises(UserError, match=failed + ", or retry when the mirror has synced$"):
        _prepare(tmp_path)


def test_apt_failing_is_said_in_apts_words_never_taken_for_a_package_it_lacks(tmp_path, archive):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.publish()
    apt = Apt("t", tmp_path / "apt-amd64", "amd64", "amd64")
    apt.refresh()
    assert apt.show(["no-such-package"]) == []
    for cache in (tmp_path / "apt-amd64" / "cache").glob("*.bin"):
        cache.unlink()
    for lists in (tmp_path / "apt-amd64" / "lists").glob("*_Packages*"):
        lists.write_bytes(b"\x00garbage" * 10)  # a disk that went bad under the lists
    with pytest.raises(UserError, match=r"^t: apt-cache show linux-image-amd64 on jitterlab's amd64 apt "
                                        r"state in .* failed: E: .*; delete .* to read Debian's lists again"):
        apt.show(["linux-image-amd64"])


def test_two_targets_resolving_at_once_share_one_memo_and_ask_apt_once_each(tmp_path, archive, monkeypatch):
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1")
    archive.kernel("bookworm", "amd64", "6.1.0-50", "6.1.176-1", flavour="rt")
    archive.publish()
    Apt("t", tmp_path / "apt-amd64", "amd64", "amd64").refresh()
    errors: list[BaseException] = []

    def resolve(meta: str) -> None:
        try:
            for _ in range(5):
                qemu_apt.find_kernels(_spec(meta), WHERE, tmp_path, "amd64")
        except BaseException as e:
            errors.append(e)

    metas = ("linux-image-amd64", "linux-image-rt-amd64")
    threads = [threading.Thread(target=resolve, args=(m,)) for m in metas]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    memo = qemu_apt._Memo(tmp_path / "kernels" / "resolved.json")._load()
    assert sorted(k for k in memo if k != "version") == ["amd64 linux-image-amd64 candidate",
                                                         "amd64 linux-image-rt-amd64 candidate"]
    assert not list((tmp_path / "kernels").glob("*.part"))
    asked: list[list[str]] = []
    monkeypatch.setattr(Apt, "show", lambda self, names: asked.append(names) or [])
    sets, _ = qemu_apt.find_kernels(_spec("linux-image-amd64"), WHERE, tmp_path, "amd64")
    assert asked == [] and sets[0].description == "linux-image-6.1.0-50-amd64 6.1.176-1"  # remembered
