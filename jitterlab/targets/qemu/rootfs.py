"""An emulated board's own Debian root, built once on this machine and kept in the cache.

The recipe (bump RECIPE_VERSION when it changes, so cached roots are built again):

    mmdebstrap --mode=root --format=directory --arch=ARCH --variant=apt --include=PKGS
        --aptopt=Acquire::Retries=3 --dpkgopt=path-exclude=... (man pages, docs, translations)
        SUITE TREE "deb MIRROR SUITE main" "deb MIRROR SUITE-updates main"
        "deb SECURITY SUITE-security main"
    (the tree made harmless to share: no ssh host keys, a neutral hostname, no host's resolver)
    mke2fs -t ext4 -b 4096 -d TREE -L jlroot -m 0 -N INODES IMAGE SIZE   (tree + headroom, rounded up
        to a power of two, which an emulated SD card needs; sparse; no root needed)

No kernel package goes in: Debian's initramfs tool would run under qemu-user for over half an
hour per architecture; the board's kernel and its small initramfs are made on this machine. The
tree stays beside the image as the cross compilers' --sysroot. On a 2-core controller an arm64
root of eleven packages took 2 min (mmdebstrap 122 s, mke2fs 0.6 s): a 221 MB tree, a 512 MB
(sparse) image.

A root is kept in <cache>/roots/<suite>-<arch>-<digest> (digest: arch, suite, package set,
recipe version) with root.json, its record; it is built in a hidden directory beside it and
renamed into place only when whole, under a lock so that two jitterlab processes build it once.
A root built without its security suite (the mirror was mid-sync; the record names the suites it
came from) is built again once that suite was read whole, or a day later; the one it replaces is
kept aside for a day, since a board may still run from it.
"""

from __future__ import annotations

import calendar
import contextlib
import errno
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from jitterlab.model.arch import ARCHES, host_arch
from jitterlab.model.errors import UserError
from jitterlab.model.units import format_duration_s
from jitterlab.targets.qemu.apt_state import archive, last_line, locked, os_release, suites

RECIPE_VERSION = 3
BUILD_TIMEOUT_S = 1800.0
IMAGE_TIMEOUT_S = 600.0
RETRY_WAIT_S = 20.0
MIN_FREE_BYTES = 2 << 30  # the tree, the image beside it and the downloaded packages meanwhile
HEADROOM = 0.15  # of the tree's size, plus HEADROOM_BYTES: ext4's metadata and journal (the image
HEADROOM_BYTES = 64 << 20  # is sparse: free blocks take no disk)
BLOCK = 4096
STALE_AGE_S = 86400.0  # a replaced root is removed a day later: a board may still be booted from it
DEGRADED_MAX_AGE_S = 86400.0
HOSTNAME = "board"
LABEL = "jlroot"
REQUIRED = ("openssh-server",)  # the board is reached over SSH only
KEY_PACKAGES = ("base-files", "libc6")  # recorded besides the packages asked for
SBIN_DIRS = ("/usr/sbin", "/sbin")  # where root's tools are when PATH lacks them
BINFMT_DIR = Path("/proc/sys/fs/binfmt_misc")
_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")
# dpkg-deb path filters: a board image without manuals, docs and translations (copyrights stay)
_EXCLUDES = ("/usr/share/man/*", "/usr/share/info/*", "/usr/share/locale/*", "/usr/share/doc/*")
_INCLUDES = ("/usr/share/doc/*/copyright", "/usr/share/locale/locale.alias")


@dataclass(frozen=True)
class BoardRoot:
    image: Path  # ext4 image (raw), attached read-only by qemu as the guest's /dev/vda
    sysroot: Path  # the unpacked tree the image was made from (cross compilers use it as --sysroot)
    description: str  # "Debian bookworm arm64 root (openssh-server, python3, ...), <size> MB"
    build_s: float | None  # how long this call spent building (None when taken from the cache)


def prepare_board_root(arch: str, packages: tuple[str, ...], where: str, cache: Path, *,
                       suite: str | None = None, progress: Callable[[str], None] | None = None) -> BoardRoot:
    """The Debian root of an `arch` board with `packages`, from the cache or built (minutes, once)."""
    wanted = package_set(packages, where)
    if arch not in ARCHES:
        raise UserError(f"{where}: unknown Debian architecture {arch!r}; give one of "
                        f"{', '.join(ARCHES.names())}")
    suite = suite or _this_suite(where)
    roots = cache / "roots"
    name = f"{suite}-{arch}-{root_digest(arch, suite, wanted)}"
    entry = roots / name
    say = progress or (lambda text: None)
    with locked(roots / f"{name}.lock"):
        for stale in roots.glob(f".{name}.*"):  # a build killed before it was whole, a root replaced
            if ".build-" in stale.name or _age_s(stale) > STALE_AGE_S:
                _remove(stale)
        record = _record(entry)
        built = False
        if record is None:
            _build(arch, suite, wanted, entry, where, say)
            built = True
        elif (why := _rebuild_why(record, arch, cache)) is not None:
            say(f"the cached {arch} root was built without {suite}-security; {why}: building it again")
            try:
                _build(arch, suite, wanted, entry, where, say)
                built = True
            except UserError as e:  # the root of before still boots, and says what it lacks
                say(f"building it again failed ({e}); the root of before is used")
        record = _record(entry)
        assert record is not None
    build_s = record["build_s"] if built else None
    return BoardRoot(entry / "root.ext4", entry / "tree", record["description"], build_s)


def _record(entry: Path) -> dict | None:
    try:
        return json.loads((entry / "root.json").read_text())
    except (OSError, ValueError):
        return None


def _rebuild_why(record: dict, arch: str, cache: Path) -> str | None:
    """Why a root built without its security suite (the mirror was mid-sync) is built again now:
    the suite was read whole since (jitterlab's apt state of that architecture, which the kernel's
    preparation reads first), or a day passed. None for a complete root, or too early."""
    if len(record.get("sources", [])) >= len(_sources(record.get("suite", ""))):
        return None
    built = _age_s_of_time(record.get("built", ""))
    read = _age_s(cache / f"apt-{arch}" / "updated")  # touched only when every suite was read
    if read < built:
        return "the security suite was read whole since"
    if built > DEGRADED_MAX_AGE_S:
        return "it is over a day old"
    return None


def _age_s(path: Path) -> float:
    try:
        return time.time() - path.stat().st_mtime
    except OSError:
        return float("inf")


def _age_s_of_time(text: str) -> float:
    try:
        return time.time() - calendar.timegm(time.strptime(text, "%Y-%m-%dT%H:%M:%SZ"))
    except ValueError:
        return float("inf")


def root_digest(arch: str, suite: str, packages: tuple[str, ...]) -> str:
    key = {"arch": arch, "suite": suite, "packages": sorted(set(packages)), "recipe": RECIPE_VERSION}
    return hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]


def package_set(packages: tuple[str, ...], where: str) -> tuple[str, ...]:
    """The packages asked for (in their order, once), plus what every board root needs."""
    wanted = tuple(dict.fromkeys((*REQUIRED, *packages)))
    for package in wanted:
        if not _PACKAGE.match(package):
            raise UserError(f"{where}: {package!r} is no Debian package name; give names like 'python3'")
        if package.startswith("linux-image"):
            raise UserError(f"{where}: the board's root holds no kernel ({package}): the kernel is "
                            "prepared on this machine; remove it from the root's packages")
    return wanted


def _this_suite(where: str) -> str:
    release = os_release()
    codename = release.get("VERSION_CODENAME")
    if release.get("ID") != "debian" or not codename:
        raise UserError(f"{where}: this system is not Debian with a release name (/etc/os-release: "
                        f"ID={release.get('ID', '?')}); name the Debian suite of the board's root, "
                        "e.g. bookworm")
    return codename


# --- building ------------------------------------------------------------------------------------


def _build(arch: str, suite: str, packages: tuple[str, ...], entry: Path, where: str,
           progress: Callable[[str], None]) -> None:
    _check_builder(entry.parent, arch, where)
    start = time.monotonic()
    build = Path(tempfile.mkdtemp(dir=entry.parent, prefix=f".{entry.name}.build-"))
    build.chmod(0o755)  # mkdtemp's 0700 would stay on the entry, which whoever boots it reads
    try:
        tree, log = build / "tree", build / "mmdebstrap.log"
        progress(f"building the {arch} root: Debian {suite} with {len(packages)} packages "
                 f"(a few minutes, once; kept in {entry})")
        sources = _mmdebstrap(arch, suite, packages, tree, log, where, progress)
        mmdebstrap_s = time.monotonic() - start
        if not (tree / "usr" / "sbin" / "sshd").is_file():
            raise UserError(f"{where}: the {arch} root has no /usr/sbin/sshd after mmdebstrap; delete "
                            f"{entry.parent} and retry")
        _neutral(tree)
        tree_bytes, inodes = _tree_size(tree)
        image_mib = -(-int(tree_bytes * (1 + HEADROOM) + HEADROOM_BYTES) // (1 << 20))
        # a power of two: qemu's SD card takes no other size (sparse: the rest costs no disk)
        image_mib = 1 << (image_mib - 1).bit_length()
        progress(f"making the {arch} root's ext4 image ({image_mib} MB)")
        _image(tree, build / "root.ext4", image_mib, inodes + inodes // 4 + 1024, where)
        build_s = time.monotonic() - start
        description = f"Debian {suite} {arch} root ({', '.join(packages)}), {image_mib} MB"
        if sources != _sources(suite):
            description += f", without {suite}-security (its mirror failed while it was built)"
        record = {
            "description": description, "arch": arch, "suite": suite, "packages": sorted(packages),
            "versions": _versions(tree, (*packages, *KEY_PACKAGES)), "sources": sources,
            "suites": [line.split()[2] for line in sources],
            "recipe": RECIPE_VERSION, "build_s": round(build_s, 1), "mmdebstrap_s": round(mmdebstrap_s, 1),
            "image_s": round(build_s - mmdebstrap_s, 1), "tree_bytes": tree_bytes,
            "image_mb": image_mib, "built": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }  # fmt: skip
        (build / "root.json").write_text(json.dumps(record, indent=1) + "\n")
        if entry.exists():  # a root built again: the one of before stays aside until a day passed
            os.replace(entry, entry.parent / f".{entry.name}.replaced-{int(time.time())}")
        os.replace(build, entry)
    except OSError as e:
        if e.errno == errno.ENOSPC:
            raise UserError(_no_space(where, entry, "writing the root")) from None
        raise
    finally:
        if build.exists():
            _remove(build)
    progress(f"the {arch} root is ready: {description}, built in {format_duration_s(build_s)}")


def _check_builder(roots: Path, arch: str, where: str) -> None:
    """What building needs, each missing piece one line with its fix."""
    if not _is_superuser():
        parent = roots.parent.parent if roots.parent.name == "jitterlab" else roots.parent
        raise UserError(
            f"{where}: the board's root is built as root (mmdebstrap makes its root-owned files and "
            f"device nodes only as root); run this once as root with the same cache (sudo env "
            f"XDG_CACHE_HOME={parent} ...): later runs only read {roots}"
        )
    for tool, package in (("mmdebstrap", "mmdebstrap"), ("mke2fs", "e2fsprogs")):
        if _which(tool) is None:
            raise UserError(f"{where}: {tool} is missing on this machine; building the board's root "
                            f"needs it (apt install {package})")
    _ensure_foreign_arch(arch, where)
    if shutil.disk_usage(roots).free < MIN_FREE_BYTES:
        raise UserError(_no_space(where, roots.parent, "before building the root"))


def _mmdebstrap(arch: str, suite: str, packages: tuple[str, ...], tree: Path, log: Path, where: str,
                progress: Callable[[str], None]) -> list[str]:
    """Build the tree; the apt sources it was built from (the security suite is left out, and the
    record says so, when only its mirror failed twice: a mirror mid-sync lasts hours)."""
    sources = _sources(suite)
    for attempt in (1, 2, 3):
        argv = [
            "mmdebstrap", "--mode=root", "--format=directory", f"--arch={arch}", "--variant=apt",
            f"--include={','.join(sorted(packages))}", "--aptopt=Acquire::Retries=3",
            *(f"--dpkgopt=path-exclude={p}" for p in _EXCLUDES),
            *(f"--dpkgopt=path-include={p}" for p in _INCLUDES),
            suite, str(tree), *sources,
        ]  # fmt: skip
        rc = _run_step(argv, log, BUILD_TIMEOUT_S, "mmdebstrap", where)
        if rc == 0:
            return sources
        text = log.read_text(errors="replace")
        if "No space left on device" in text:
            raise UserError(_no_space(where, tree.parent.parent, "mmdebstrap"))
        missing = re.findall(r"Unable to locate package (\S+)|Package '?([^' ]+)'? has no installation "
                             r"candidate", text)
        if missing:
            names = ", ".join(dict.fromkeys(a or b for a, b in missing))
            raise UserError(f"{where}: Debian {suite} {arch} has no package {names} ({_failing_line(text)}); "
                            "remove it from the target's packages = [...]")
        failing = _failing_line(text)
        _remove(tree)
        if attempt == 1:  # a mirror mid-sync or a dropped connection: once more, after a pause
            progress(f"mmdebstrap failed ({failing}); retrying in {RETRY_WAIT_S:g} s")
            time.sleep(RETRY_WAIT_S)
        elif attempt == 2 and f"{suite}-security" in failing and len(sources) > 1:
            progress(f"the security suite's mirror failed twice ({failing}); building without it "
                     "(the root's record says so)")
            sources = [line for line in sources if f"{suite}-security" not in line]
        else:
            break
    raise UserError(f"{where}: building the {arch} root failed twice in mmdebstrap: {failing}; "
                    "check the network and retry")


def _failing_line(text: str) -> str:
    """The line that says what went wrong: which file apt failed to fetch and why, else apt's last
    error, never mmdebstrap's or apt's summary of it."""
    lines = [" ".join(line.split()) for line in text.splitlines() if line.startswith("E:")]
    lines = [re.sub(r"\s*\[IP: [^]]*\]", "", line) for line in lines]
    fetch = [line for line in lines if line.startswith("E: Failed to fetch")]
    summary = ("E: mmdebstrap failed", "E: setup failed", "E: run failed", "E: apt-get ",
               "E: Some index files")
    useful = [line for line in lines if not line.startswith(summary)]
    return fetch[0] if fetch else (useful or lines or [last_line(text)])[-1]


def _run_step(argv: list[str], log: Path, timeout_s: float, step: str, where: str) -> int:
    """Run `argv` with its output in `log`; on a timeout or an interrupt its whole process group ends."""
    with open(log, "w") as out:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)  # apt and dpkg below it end with it
        try:
            return proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            _stop(proc)
            raise UserError(f"{where}: building the board's root: {step} took over "
                            f"{format_duration_s(timeout_s)}; check the network and retry") from None
        except BaseException:
            _stop(proc)
            raise


def _stop(proc: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 10.0)):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _sources(suite: str) -> list[str]:
    """The apt sources inside the root: a board image gets its security updates."""
    return [f"deb {mirror} {name} main" for mirror, name in suites(suite, archive())]


def _neutral(tree: Path) -> None:
    """Nothing of this machine and nothing two boards would share: each boot brings its own host keys."""
    for key in (tree / "etc" / "ssh").glob("ssh_host_*"):
        key.unlink()
    for name, text in (("hostname", f"{HOSTNAME}\n"),
                       ("hosts", f"127.0.0.1\tlocalhost\n127.0.1.1\t{HOSTNAME}\n::1\tlocalhost\n"),
                       ("resolv.conf", "")):  # mmdebstrap copied this machine's
        path = tree / "etc" / name
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        path.write_text(text)
        path.chmod(0o644)


def _tree_size(tree: Path) -> tuple[int, int]:
    """(bytes the tree takes in 4 KiB blocks, its number of entries)."""
    total, entries = 0, 1
    for top, dirs, files in os.walk(tree):
        for name in (*dirs, *files):
            size = os.lstat(os.path.join(top, name)).st_size
            total += -(-max(size, 1) // BLOCK) * BLOCK
            entries += 1
    return total, entries


def _image(tree: Path, image: Path, size_mib: int, inodes: int, where: str) -> None:
    # 4 KiB blocks: below 512 MB mke2fs would pick 1 KiB ones, made for floppy-sized file systems
    argv = [_which("mke2fs") or "mke2fs", "-q", "-F", "-t", "ext4", "-b", str(BLOCK), "-d", str(tree),
            "-L", LABEL, "-m", "0", "-N", str(inodes), str(image), f"{size_mib}M"]
    log = image.with_suffix(".log")
    if _run_step(argv, log, IMAGE_TIMEOUT_S, "mke2fs", where) != 0:
        text = log.read_text(errors="replace")
        if "No space left on device" in text:
            raise UserError(_no_space(where, image.parent.parent, "mke2fs"))
        raise UserError(f"{where}: making the root's ext4 image failed: {last_line(text)} "
                        f"({' '.join(argv[:3])} ...)")
    log.unlink()


def _versions(tree: Path, packages: tuple[str, ...]) -> dict[str, str]:
    """The installed versions of `packages` in the tree, as its dpkg database has them."""
    argv = ["dpkg-query", f"--admindir={tree}/var/lib/dpkg", "-W", "-f", "${Package}\t${Version}\n",
            *dict.fromkeys(packages)]
    try:  # exit status 1 when one is not there: the others still count
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    pairs = (line.split("\t", 1) for line in done.stdout.splitlines() if "\t" in line)
    return {name: version for name, version in pairs if version}


def _no_space(where: str, place: Path, step: str) -> str:
    return (f"{where}: no space left for the board's root in {place} ({step}); it needs about "
            f"{MIN_FREE_BYTES >> 30} GB there while it is built: free space or set XDG_CACHE_HOME to a "
            "roomier disk, then retry")


def _remove(path: Path) -> None:
    """Delete a build directory, never through a mount mmdebstrap may have left in it."""
    inside = [m for m in _mounts() if m == path or path in m.parents]
    for mount in sorted(inside, key=lambda p: len(p.parts), reverse=True):
        subprocess.run(["umount", "-l", str(mount)], capture_output=True, stdin=subprocess.DEVNULL)
    if any(m == path or path in m.parents for m in _mounts()):
        return  # left for a person to look at rather than delete through a mount
    shutil.rmtree(path, ignore_errors=True)


def _mounts() -> list[Path]:
    try:
        lines = Path("/proc/self/mountinfo").read_text().splitlines()
    except OSError:
        return []
    return [Path(line.split()[4].replace("\\040", " ")) for line in lines if len(line.split()) > 4]


# --- running the board's programs on this machine ------------------------------------------------


def _ensure_foreign_arch(arch: str, where: str) -> None:
    """mmdebstrap runs the root's maintainer scripts: an `arch` not this machine's needs qemu-user
    through binfmt_misc; enabled here when possible (as root), else one line with the fix."""
    if arch == host_arch():
        return
    handler = f"qemu-{ARCHES.get(arch, where).qemu_user}"
    fix = (f"as root: apt install qemu-user-static binfmt-support arch-test; mount -t binfmt_misc "
           f"binfmt_misc {BINFMT_DIR}; update-binfmts --enable {handler}")
    if not _enabled(handler) and _is_superuser():
        if not (BINFMT_DIR / "status").exists():
            _quiet(["mount", "-t", "binfmt_misc", "binfmt_misc", str(BINFMT_DIR)])
        if not _enabled(handler) and _which("update-binfmts"):
            _quiet(["update-binfmts", "--enable", handler])
    if not _enabled(handler):
        raise UserError(f"{where}: this machine cannot run {arch} programs (binfmt_misc handler {handler} "
                        f"is not enabled), which building the board's root needs; {fix}")
    if _which("arch-test") is None:
        raise UserError(f"{where}: arch-test is missing; mmdebstrap needs it for a foreign root (apt install "
                        "arch-test)")
    done = _quiet(["arch-test", arch])
    if done.returncode != 0:
        raise UserError(f"{where}: arch-test {arch} fails ({last_line(done.stdout + done.stderr)}); {fix}")


def _enabled(handler: str) -> bool:
    try:
        return (BINFMT_DIR / handler).read_text().splitlines()[:1] == ["enabled"]
    except OSError:
        return False


def _quiet(argv: list[str]) -> subprocess.CompletedProcess:
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as e:
        return subprocess.CompletedProcess(argv, 1, "", str(e))


def _is_superuser() -> bool:
    return os.geteuid() == 0


def _which(tool: str) -> str | None:
    return shutil.which(tool) or next(
        (f"{d}/{tool}" for d in SBIN_DIRS if os.access(f"{d}/{tool}", os.X_OK)), None
    )
