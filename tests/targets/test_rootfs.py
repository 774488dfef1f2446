"""The emulated board's own root: built once by mmdebstrap and mke2fs (fakes here), kept in the cache,
never kept half-built, and every fault one line that names where and the fix."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu import rootfs
from jitterlab.targets.qemu.rootfs import prepare_board_root, root_digest

PACKAGES = ("openssh-server", "python3", "python3-libgpiod", "gpiod")
WHERE = "target 'board'"

# mmdebstrap as far as prepare_board_root sees it: the tree in the directory after the suite, the apt
# sources after that, a Debian-like dpkg database; FAKE_MM says how this call ends
FAKE_MMDEBSTRAP = r"""
import json, os, sys, time
from pathlib import Path
state = Path(os.environ["FAKE_DIR"])
calls = sorted(state.glob("mmdebstrap-*.json"))
(state / f"mmdebstrap-{len(calls)}.json").write_text(json.dumps(sys.argv[1:]))
mode = os.environ.get("FAKE_MM", "ok")
if mode == "sleep":
    (state / "pid").write_text(str(os.getpid()))
    time.sleep(60)
if mode == "missing":
    print("E: Unable to locate package nosuch-pkg")
    print("E: setup failed: E: apt-get --yes install nosuch-pkg failed")
    sys.exit(25)
security = any("-security" in a for a in sys.argv)
if mode == "down":
    print("Err:1 http://deb.debian.org/debian bookworm/main arm64 Packages")
    print("E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/main/binary-arm64/Packages.xz  "
          "Could not connect to deb.debian.org:80 [IP: 151.101.2.132 80]")
    print("E: mmdebstrap failed to run")
    sys.exit(25)
if (mode == "security-down" and security) or (mode == "flaky" and not calls):
    print("Err:3 http://deb.debian.org/debian-security bookworm-security/main arm64 Packages")
    print("  Hash Sum mismatch")
    print("E: Failed to fetch http://deb.debian.org/debian-security/dists/bookworm-security/main/"
          "binary-arm64/by-hash/SHA256/ab  Hash Sum mismatch [IP: 151.101.2.132 80]")
    print("E: Some index files failed to download. They have been ignored, or old ones used instead.")
    print("E: apt-get update --error-on=any -oAPT::Status-Fd=<$fd> -oDpkg::Use-Pty=false failed")
    print("E: mmdebstrap failed to run")
    sys.exit(25)
if mode == "nospace":
    print("tar: ./usr/lib/libx.so: Cannot write: No space left on device")
    sys.exit(25)
positional = [a for a in sys.argv[1:] if not a.startswith("--")]
tree = Path(positional[1])
for sub in ("etc/ssh", "usr/sbin", "var/lib/dpkg/info", "usr/share/doc/python3"):
    (tree / sub).mkdir(parents=True, exist_ok=True)
(tree / "usr/sbin/sshd").write_bytes(b"ELF sshd")
(tree / "usr/lib").mkdir(parents=True)
(tree / "usr/lib/libbig.so").write_bytes(b"x" * 100000)
for kind in ("rsa", "ed25519"):
    (tree / f"etc/ssh/ssh_host_{kind}_key").write_text("PRIVATE")
    (tree / f"etc/ssh/ssh_host_{kind}_key.pub").write_text("PUBLIC")
(tree / "etc/ssh/sshd_config").write_text("Port 22\n")
(tree / "etc/hostname").write_text("the-controller\n")
(tree / "etc/resolv.conf").write_text("nameserver 192.168.1.1\n")
versions = {"openssh-server": "1:9.2p1-2+deb12u7", "python3": "3.11.2-1+b1", "libc6": "2.36-9+deb12u13",
            "base-files": "12.4+deb12u12", "gpiod": "1.6.3-1+b3", "python3-libgpiod": "1.6.3-1+b3"}
(tree / "var/lib/dpkg/status").write_text("".join(
    f"Package: {p}\nStatus: install ok installed\nMaintainer: x\nArchitecture: arm64\nVersion: {v}\n"
    "Description: x\n\n" for p, v in versions.items()))
"""

FAKE_MKE2FS = r"""
import json, os, sys
from pathlib import Path
Path(os.environ["FAKE_DIR"], "mke2fs.json").write_text(json.dumps(sys.argv[1:]))
if os.environ.get("FAKE_MKE2FS") == "nospace":
    print("mke2fs: No space left on device while writing out and closing file system")
    sys.exit(1)
tree = Path(sys.argv[sys.argv.index("-d") + 1])
Path(sys.argv[-2]).write_text("ext4 of " + ",".join(sorted(p.name for p in tree.iterdir())))
"""


@pytest.fixture
def fakes(tmp_path, monkeypatch):
    """A PATH with only the fake builders (and this machine's dpkg-query), as root, arch native."""
    bin_dir, state = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state.mkdir()
    for name, text in (("mmdebstrap", FAKE_MMDEBSTRAP), ("mke2fs", FAKE_MKE2FS)):
        script = bin_dir / name
        script.write_text(f"#!{sys.executable}\n{text}")
        script.chmod(0o755)
    if os.path.exists("/usr/bin/dpkg-query"):
        (bin_dir / "dpkg-query").symlink_to("/usr/bin/dpkg-query")
    monkeypatch.setenv("PATH", str(bin_dir))
    monkeypatch.setenv("FAKE_DIR", str(state))
    monkeypatch.setattr(rootfs, "SBIN_DIRS", ())
    monkeypatch.setattr(rootfs, "RETRY_WAIT_S", 0.0)
    monkeypatch.setattr(rootfs, "_is_superuser", lambda: True)
    monkeypatch.setattr(rootfs, "host_arch", lambda: "arm64")
    return bin_dir, state


def calls(state: Path) -> list[list[str]]:
    return [json.loads(p.read_text()) for p in sorted(state.glob("mmdebstrap-*.json"))]


def test_a_root_is_built_once_then_taken_from_the_cache(tmp_path, fakes):
    _, state = fakes
    said: list[str] = []
    root = prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm",
                              progress=said.append)
    entry = tmp_path / "cache" / "roots" / f"bookworm-arm64-{root_digest('arm64', 'bookworm', PACKAGES)}"
    assert root.image == entry / "root.ext4" and root.sysroot == entry / "tree"
    assert root.image.read_text() == "ext4 of etc,usr,var"
    assert entry.stat().st_mode & 0o777 == 0o755  # readable by whoever boots it
    assert root.description.startswith("Debian bookworm arm64 root (openssh-server, python3, "
                                       "python3-libgpiod, gpiod), ")
    assert root.description.endswith(" MB") and root.build_s is not None
    assert said[0].startswith("building the arm64 root") and said[-1].startswith("the arm64 root is ready")

    argv = calls(state)[0]
    assert {"--arch=arm64", "--variant=apt", "--mode=root", "--format=directory"} <= set(argv)
    assert "--include=gpiod,openssh-server,python3,python3-libgpiod" in argv
    assert not any("linux-image" in a for a in argv)
    tree = Path(argv[-4])  # built beside the entry, renamed into place when whole
    assert tree.name == "tree" and tree.parent.parent == entry.parent
    assert tree.parent.name.startswith(f".{entry.name}.build-") and argv[-5] == "bookworm"
    assert argv[-3:] == ["deb http://deb.debian.org/debian bookworm main",
                         "deb http://deb.debian.org/debian bookworm-updates main",
                         "deb http://deb.debian.org/debian-security bookworm-security main"]
    mke2fs = json.loads((state / "mke2fs.json").read_text())
    assert mke2fs[mke2fs.index("-t") + 1] == "ext4" and mke2fs[mke2fs.index("-L") + 1] == "jlroot"
    assert mke2fs[mke2fs.index("-d") + 1].endswith("/tree") and mke2fs[-1].endswith("M")

    # nothing of this machine, nothing two boards would share
    assert not list((root.sysroot / "etc" / "ssh").glob("ssh_host_*"))
    assert (root.sysroot / "etc" / "ssh" / "sshd_config").exists()
    assert (root.sysroot / "etc" / "hostname").read_text() == "board\n"
    assert (root.sysroot / "etc" / "resolv.conf").read_text() == ""

    record = json.loads((entry / "root.json").read_text())
    assert record["arch"] == "arm64" and record["suite"] == "bookworm"
    assert record["packages"] == sorted(PACKAGES) and record["recipe"] == rootfs.RECIPE_VERSION
    if os.path.exists("/usr/bin/dpkg-query"):
        assert record["versions"]["openssh-server"] == "1:9.2p1-2+deb12u7"
        assert record["versions"]["libc6"] == "2.36-9+deb12u13"
    assert record["description"] == root.description and record["build_s"] == root.build_s

    again = prepare_board_root("arm64", tuple(reversed(PACKAGES)), WHERE, tmp_path / "cache",
                               suite="bookworm")
    assert again.build_s is None and again.image == root.image and len(calls(state)) == 1
    assert [p.name for p in entry.parent.iterdir() if p.is_dir()] == [entry.name]  # no build left over


def test_the_cache_key_covers_arch_suite_packages_and_the_recipe(monkeypatch):
    base = root_digest("arm64", "bookworm", PACKAGES)
    assert root_digest("arm64", "bookworm", (*reversed(PACKAGES), "python3")) == base
    assert root_digest("armhf", "bookworm", PACKAGES) != base
    assert root_digest("arm64", "trixie", PACKAGES) != base
    assert root_digest("arm64", "bookworm", (*PACKAGES, "stress-ng")) != base
    monkeypatch.setattr(rootfs, "RECIPE_VERSION", rootfs.RECIPE_VERSION + 1)
    assert root_digest("arm64", "bookworm", PACKAGES) != base


def test_the_suite_is_this_machines_release_and_sshd_is_always_in(tmp_path, fakes, monkeypatch):
    _, state = fakes
    monkeypatch.setattr(rootfs, "os_release", lambda: {"ID": "debian", "VERSION_CODENAME": "trixie"})
    root = prepare_board_root("arm64", ("python3",), WHERE, tmp_path / "cache")
    assert root.sysroot.parent.name.startswith("trixie-arm64-")
    argv = calls(state)[0]
    assert "trixie" in argv and "--include=openssh-server,python3" in argv
    monkeypatch.setattr(rootfs, "os_release", lambda: {"ID": "ubuntu", "VERSION_CODENAME": "noble"})
    with pytest.raises(UserError, match=r"^target 'board': this system is not Debian .*e\.g\. bookworm$"):
        prepare_board_root("arm64", ("python3",), WHERE, tmp_path / "cache")


def test_a_package_the_suite_lacks_is_named_and_nothing_is_kept(tmp_path, fakes, monkeypatch):
    _, state = fakes
    monkeypatch.setenv("FAKE_MM", "missing")
    with pytest.raises(UserError) as err:
        prepare_board_root("arm64", ("nosuch-pkg",), WHERE, tmp_path / "cache", suite="bookworm")
    assert str(err.value) == ("target 'board': Debian bookworm arm64 has no package nosuch-pkg (E: Unable "
                              "to locate package nosuch-pkg); remove it from the target's packages = [...]")
    assert len(calls(state)) == 1  # not a mirror's hiccup: no retry
    assert [p.suffix for p in (tmp_path / "cache" / "roots").iterdir()] == [".lock"]


def test_a_mirror_hiccup_is_retried_once(tmp_path, fakes, monkeypatch):
    _, state = fakes
    monkeypatch.setenv("FAKE_MM", "flaky")
    said: list[str] = []
    root = prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm",
                              progress=said.append)
    assert root.image.is_file() and len(calls(state)) == 2
    assert any(s.startswith("mmdebstrap failed (E: Failed to fetch") and "retrying" in s for s in said)


def test_a_mirror_that_stays_down_names_apts_error_and_the_network(tmp_path, fakes, monkeypatch):
    _, state = fakes
    monkeypatch.setenv("FAKE_MM", "down")
    with pytest.raises(UserError) as err:
        prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    message = str(err.value)
    assert message.startswith("target 'board': building the arm64 root failed twice in mmdebstrap: "
                              "E: Failed to fetch http://deb.debian.org/debian/dists/bookworm/")
    assert message.endswith("Could not connect to deb.debian.org:80; check the network and retry")
    assert "\n" not in message and len(calls(state)) == 2
    assert [p.suffix for p in (tmp_path / "cache" / "roots").iterdir()] == [".lock"]


def test_a_security_mirror_mid_sync_builds_without_it_and_the_record_says_so(tmp_path, fakes, monkeypatch):
    _, state = fakes
    monkeypatch.setenv("FAKE_MM", "security-down")
    said: list[str] = []
    root = prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm",
                              progress=said.append)
    tries = calls(state)
    assert len(tries) == 3 and not any("-security" in a for a in tries[2])
    assert any("-security" in a for a in tries[0]) and any("-security" in a for a in tries[1])
    assert root.description.endswith(", without bookworm-security (its mirror failed while it was built)")
    record = json.loads((root.image.parent / "root.json").read_text())
    assert record["sources"] == ["deb http://deb.debian.org/debian bookworm main",
                                 "deb http://deb.debian.org/debian bookworm-updates main"]
    assert any(s.startswith("the security suite's mirror failed twice") for s in said)


@pytest.mark.parametrize("tool, package", [("mmdebstrap", "mmdebstrap"), ("mke2fs", "e2fsprogs")])
def test_a_missing_builder_names_its_package(tmp_path, fakes, tool, package):
    bin_dir, state = fakes
    (bin_dir / tool).unlink()
    with pytest.raises(UserError, match=rf"^target 'board': {tool} is missing .*\(apt install {package}\)$"):
        prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    assert calls(state) == []


def test_a_full_disk_says_where_and_how_much(tmp_path, fakes, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FAKE_MM", "nospace")
    with pytest.raises(UserError, match=r"^target 'board': no space left for the board's root in .*roots "
                                        r"\(mmdebstrap\); it needs about 2 GB there"):
        prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm")
    monkeypatch.setenv("FAKE_MM", "ok")
    monkeypatch.setenv("FAKE_MKE2FS", "nospace")
    with pytest.raises(UserError, match=r"no space left for the board's root in .* \(mke2fs\)"):
        prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm")
    monkeypatch.setattr(rootfs, "MIN_FREE_BYTES", 1 << 62)  # refused before anything is downloaded
    with pytest.raises(UserError, match=r"\(before building the root\)"):
        prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm")
    assert [p.suffix for p in (cache / "roots").iterdir()] == [".lock"]


def test_a_build_that_hangs_is_stopped_and_names_the_step(tmp_path, fakes, monkeypatch):
    _, state = fakes
    monkeypatch.setenv("FAKE_MM", "sleep")
    monkeypatch.setattr(rootfs, "BUILD_TIMEOUT_S", 1.0)
    with pytest.raises(UserError, match=r"^target 'board': building the board's root: mmdebstrap took over "
                                        r"1 s; check the network and retry$"):
        prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    with pytest.raises(ProcessLookupError):
        os.kill(int((state / "pid").read_text()), 0)


def test_a_half_build_of_a_killed_jitterlab_is_removed_never_used(tmp_path, fakes):
    roots = tmp_path / "cache" / "roots"
    name = f"bookworm-arm64-{root_digest('arm64', 'bookworm', PACKAGES)}"
    half = roots / f".{name}.build-x1y2"
    (half / "tree" / "etc").mkdir(parents=True)
    root = prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    assert not half.exists() and root.image.is_file()


def test_bad_package_lists_are_refused_before_building(tmp_path, fakes):
    _, state = fakes
    with pytest.raises(UserError, match=r"^target 'board': 'python3 gcc' is no Debian package name"):
        prepare_board_root("arm64", ("python3 gcc",), WHERE, tmp_path / "cache", suite="bookworm")
    with pytest.raises(UserError, match=r"holds no kernel \(linux-image-arm64\): .* remove it"):
        prepare_board_root("arm64", ("linux-image-arm64",), WHERE, tmp_path / "cache", suite="bookworm")
    with pytest.raises(UserError, match=r"unknown Debian architecture 'aarch64'; give one of amd64, arm64"):
        prepare_board_root("aarch64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    assert calls(state) == []


def test_not_root_is_one_line_with_the_way_to_build_it(tmp_path, fakes, monkeypatch):
    monkeypatch.setattr(rootfs, "_is_superuser", lambda: False)
    with pytest.raises(UserError, match=r"^target 'board': the board's root is built as root .*\(sudo env "
                                        r"XDG_CACHE_HOME="):
        prepare_board_root("arm64", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")


# --- a root of another architecture: binfmt_misc --------------------------------------------------


def binfmt(tmp_path, monkeypatch, bin_dir: Path, *, mounted: bool, enabled: bool) -> Path:
    """A binfmt_misc directory of our own; mount and update-binfmts fakes act on it and log themselves."""
    where = tmp_path / "binfmt_misc"
    where.mkdir()
    monkeypatch.setattr(rootfs, "BINFMT_DIR", where)
    monkeypatch.setattr(rootfs, "host_arch", lambda: "amd64")
    if mounted:
        (where / "status").write_text("enabled\n")
    if enabled:
        (where / "qemu-arm").write_text("enabled\ninterpreter /usr/libexec/qemu-binfmt/arm-binfmt-P\n")
    scripts = {
        "mount": 'echo "mount $*" >> "$FAKE_DIR/log"; echo enabled > "$5/status"',
        "update-binfmts": f'echo "update-binfmts $*" >> "$FAKE_DIR/log"; echo enabled > "{where}/$2"',
        "arch-test": 'echo "arch-test $*" >> "$FAKE_DIR/log"; echo "$1: ok"',
    }
    for name, text in scripts.items():
        (bin_dir / name).write_text(f"#!/bin/sh\n{text}\n")
        (bin_dir / name).chmod(0o755)
    return where


def test_a_foreign_root_mounts_binfmt_misc_and_enables_qemu_as_root(tmp_path, fakes, monkeypatch):
    bin_dir, state = fakes
    where = binfmt(tmp_path, monkeypatch, bin_dir, mounted=False, enabled=False)
    root = prepare_board_root("armhf", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    assert root.image.is_file() and "--arch=armhf" in calls(state)[0]
    assert (state / "log").read_text().splitlines() == [
        f"mount -t binfmt_misc binfmt_misc {where}", "update-binfmts --enable qemu-arm", "arch-test armhf"]


def test_a_foreign_root_with_qemu_ready_changes_nothing(tmp_path, fakes, monkeypatch):
    bin_dir, state = fakes
    binfmt(tmp_path, monkeypatch, bin_dir, mounted=True, enabled=True)
    prepare_board_root("armhf", PACKAGES, WHERE, tmp_path / "cache", suite="bookworm")
    assert (state / "log").read_text().splitlines() == ["arch-test armhf"]


def test_a_foreign_root_without_qemu_as_a_user_names_the_fix(tmp_path, fakes, monkeypatch):
    bin_dir, state = fakes
    monkeypatch.setattr(rootfs, "_is_superuser", lambda: False)
    binfmt(tmp_path, monkeypatch, bin_dir, mounted=False, enabled=False)
    with pytest.raises(UserError) as err:
        rootfs._ensure_foreign_arch("armhf", WHERE)
    assert str(err.value) == (
        f"target 'board': this machine cannot run armhf programs (binfmt_misc handler qemu-arm is not "
        f"enabled), which building the board's root needs; as root: apt install qemu-user-static "
        f"binfmt-support arch-test; mount -t binfmt_misc binfmt_misc {tmp_path}/binfmt_misc; "
        f"update-binfmts --enable qemu-arm")
    assert not (state / "log").exists()


def test_a_root_without_its_security_suite_is_built_again_once_the_suite_is_back(tmp_path, fakes,
                                                                                monkeypatch):
    _, state = fakes
    cache = tmp_path / "cache"
    monkeypatch.setenv("FAKE_MM", "security-down")
    degraded = prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm")
    record = json.loads((degraded.image.parent / "root.json").read_text())
    assert record["suites"] == ["bookworm", "bookworm-updates"]
    monkeypatch.setenv("FAKE_MM", "ok")
    # the suite is still mid-sync (the arm64 apt state has not been read whole since): kept
    assert prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm").build_s is None
    assert len(calls(state)) == 3
    # the kernel's apt state read every suite after the root was built: built again, whole
    (cache / "apt-arm64").mkdir(parents=True)
    (cache / "apt-arm64" / "updated").touch()
    said: list[str] = []
    whole = prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm", progress=said.append)
    assert whole.build_s is not None and "without" not in whole.description
    assert json.loads((whole.image.parent / "root.json").read_text())["suites"] == [
        "bookworm", "bookworm-updates", "bookworm-security"]
    assert said[0] == ("the cached arm64 root was built without bookworm-security; the security suite was "
                       "read whole since: building it again")
    replaced = list((cache / "roots").glob(".bookworm-arm64-*.replaced-*"))
    assert len(replaced) == 1 and (replaced[0] / "root.ext4").exists()  # a board may still run from it
    kept = prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm")
    assert kept.build_s is None  # complete: kept


def test_a_degraded_root_a_day_old_is_built_again_and_kept_when_that_fails(tmp_path, fakes, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FAKE_MM", "security-down")
    degraded = prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm")
    path = degraded.image.parent / "root.json"
    record = json.loads(path.read_text())
    path.write_text(json.dumps({**record, "built": "2026-01-01T00:00:00Z"}))
    monkeypatch.setenv("FAKE_MM", "down")  # the network is gone: the root of before still boots
    said: list[str] = []
    again = prepare_board_root("arm64", PACKAGES, WHERE, cache, suite="bookworm", progress=said.append)
    assert again.image == degraded.image and again.description == degraded.description
    assert "it is over a day old: building it again" in said[0]
    assert said[-1].startswith("building it again failed (target 'board': building the arm64 root failed")
    assert said[-1].endswith("; the root of before is used")
