"""A complete native build is kept here and sent, not rebuilt, to a target of the same build
identity; a target whose identity differs in any field, or cannot be read, builds; a damaged entry
is built again and replaced."""

from __future__ import annotations

import io
import platform
import tarfile
from pathlib import Path

import pytest

from jitterlab.execution import build_cache, deploy
from jitterlab.targets.fake import FakeTarget
from jitterlab.targets.local import LocalTarget

IDENTITY = {"machine": "x86_64", "cc_machine": "x86_64-linux-gnu", "cc_version": "12.2.0",
            "libc": "glibc 2.36", "os_id": "debian", "os_version_id": "12", "libgpiod": "1.6.3"}


@pytest.fixture
def programs(tmp_path, monkeypatch) -> Path:
    """Two small programs in place of jitterlab's, so that a build takes a moment."""
    c = tmp_path / "programs" / "c"
    c.mkdir(parents=True)
    (c / "one.c").write_text("int main(void) { return 0; }\n")
    (c / "two.c").write_text("int main(void) { return 1; }\n")
    (c / "Makefile").write_text("all: one two\none: one.c\n\t$(CC) -o $@ one.c\n"
                                "two: two.c\n\t$(CC) -o $@ two.c\n")
    monkeypatch.setattr(deploy, "PROGRAMS_DIR", tmp_path / "programs")
    return c


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    monkeypatch.setenv(build_cache.ENV, str(tmp_path / "cache"))
    return tmp_path / "cache"


def _target(tmp_path: Path, name: str, identity: dict[str, str] | None = None) -> FakeTarget:
    """A target whose commands run here, and whose build identity is `identity`."""
    target = FakeTarget(name, workdir=str(tmp_path / name), fallback_local=True)
    text = "".join(f"{k}={v}\n" for k, v in (IDENTITY if identity is None else identity).items())
    target.respond(["sh", "-c", build_cache.IDENTITY_SCRIPT], text)
    return target


def _made(target: FakeTarget) -> bool:
    return any(call[0] == "make" for call in target.calls)


def _last_member(entry: Path) -> str:
    with tarfile.open(entry) as tar:
        return tar.getnames()[-1]


def _entries(cache: Path) -> list[Path]:
    return sorted(cache.glob("*.tar"))


def test_a_fresh_target_of_the_same_identity_gets_the_build_without_make(programs, cache, tmp_path):
    first = _target(tmp_path, "a")
    built = deploy.deploy(first)
    assert _made(first) and built.built == {"one", "two"} and built.build == "native"
    [entry] = _entries(cache)
    assert _last_member(entry) == "origin.json"

    fresh = _target(tmp_path, "b")
    reused = deploy.deploy(fresh)
    assert not _made(fresh)
    assert reused.built == {"one", "two"}
    assert reused.bindir == f"{fresh.workdir}/programs-{deploy.programs_hash()}"
    assert reused.build == f"native; reused {entry.stem} built on a"
    assert Path(reused.bindir, ".built").read_text() == f"native\nreused {entry.stem} built on a\n"
    assert LocalTarget(workdir=str(tmp_path / "run")).run([f"{reused.bindir}/c/two"]).rc == 1  # it runs
    assert sorted(p.name for p in Path(fresh.workdir).iterdir()) == [Path(reused.bindir).name]

    # a target that has its build costs no more than before: no identity asked, nothing sent
    fresh.calls.clear()
    assert deploy.deploy(fresh) == reused
    assert [c[0] for c in fresh.calls] == ["cat", "sh"] and build_cache.IDENTITY_SCRIPT not in fresh.calls[1]


@pytest.mark.parametrize("field", build_cache.FIELDS)
def test_a_target_whose_identity_differs_in_any_field_builds(programs, cache, tmp_path, field):
    deploy.deploy(_target(tmp_path, "a"))
    other = _target(tmp_path, "b", {**IDENTITY, field: IDENTITY[field] + ".1"})
    done = deploy.deploy(other)
    assert _made(other) and done.build == "native" and done.built == {"one", "two"}
    assert len(_entries(cache)) == 2  # its own build is kept beside the other


@pytest.mark.parametrize("field", ["cc_version", "libc", "libgpiod", "os_id"])
def test_a_target_whose_identity_cannot_be_read_fully_builds_and_keeps_nothing(programs, cache, tmp_path,
                                                                                field):
    deploy.deploy(_target(tmp_path, "a"))
    unread = _target(tmp_path, "b", {k: v for k, v in IDENTITY.items() if k != field})
    assert deploy.deploy(unread).build == "native" and _made(unread)
    assert len(_entries(cache)) == 1


def test_a_partial_build_is_not_kept(programs, cache, tmp_path):
    (programs / "two.c").write_text("#include <no-such-library.h>\n")
    target = _target(tmp_path, "a")
    done = deploy.deploy(target)
    assert done.built == {"one"} and done.bindir.endswith(".partial")
    assert _entries(cache) == []
    fresh = _target(tmp_path, "b")
    assert deploy.deploy(fresh).built == {"one"} and _made(fresh)


def _truncate(entry: Path) -> None:
    data = entry.read_bytes()
    entry.write_bytes(data[: len(data) // 2])


def _garbage(entry: Path) -> None:
    entry.write_bytes(b"not a tar at all\n" * 50)


def _altered(entry: Path) -> None:
    """A whole tar whose program is not the one that was built (the disk, or a hand, changed it)."""
    with tarfile.open(entry) as tar:
        members = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar.getmembers()]
    with tarfile.open(entry, "w") as tar:
        for member, data in members:
            if member.name == "tree/c/one":
                data = data[:-1] + bytes([data[-1] ^ 0xFF])
            tar.addfile(member, None if data is None else io.BytesIO(data))


def _empty(entry: Path) -> None:
    entry.write_bytes(b"")


@pytest.mark.parametrize("damage", [_truncate, _garbage, _altered, _empty])
def test_a_damaged_entry_is_built_again_and_replaced(programs, cache, tmp_path, damage):
    deploy.deploy(_target(tmp_path, "a"))
    [entry] = _entries(cache)
    damage(entry)
    fresh = _target(tmp_path, "b")
    done = deploy.deploy(fresh)
    assert _made(fresh) and done.build == "native" and done.built == {"one", "two"}
    assert _entries(cache) == [entry]
    assert _last_member(entry) == "origin.json"
    third = _target(tmp_path, "c")  # the replaced entry serves
    assert "reused" in deploy.deploy(third).build and not _made(third)


def test_an_entry_of_another_identity_under_this_key_is_never_sent(programs, cache, tmp_path):
    deploy.deploy(_target(tmp_path, "a"))
    [entry] = _entries(cache)
    other = {**IDENTITY, "cc_machine": "aarch64-linux-gnu"}
    key = build_cache.entry_for(_target(tmp_path, "probe", other), deploy.programs_hash(), 10).path
    entry.rename(key)  # copied by hand under the other identity's name
    target = _target(tmp_path, "b", other)
    assert deploy.deploy(target).build == "native" and _made(target)


def test_off_asks_no_identity_and_keeps_nothing(programs, tmp_path, monkeypatch):
    monkeypatch.setenv(build_cache.ENV, "off")
    for name in ("a", "b"):
        target = _target(tmp_path, name)
        assert deploy.deploy(target).build == "native" and _made(target)
        assert not any(build_cache.IDENTITY_SCRIPT in call for call in target.calls)
    assert build_cache.cache_dir() is None


def test_a_cross_build_is_not_kept(programs, cache, tmp_path, monkeypatch):
    monkeypatch.setattr(deploy, "has", lambda target, cap: type("X", (), {"cross_cc": "gcc"})())
    target = _target(tmp_path, "a")
    assert deploy.deploy(target).build == "cross gcc"
    assert not any(build_cache.IDENTITY_SCRIPT in call for call in target.calls) and _entries(cache) == []


def test_the_identity_script_reads_this_machine():
    text = LocalTarget().run(["sh", "-c", build_cache.IDENTITY_SCRIPT]).stdout
    lines = dict(line.split("=", 1) for line in text.splitlines())
    assert lines["machine"] == platform.machine()
    assert set(lines) <= set(build_cache.FIELDS)
    assert (build_cache.parse_identity(text) is not None) == (set(lines) == set(build_cache.FIELDS))


def test_parse_identity_needs_every_field():
    text = "".join(f"{k}={v}\n" for k, v in IDENTITY.items())
    assert build_cache.parse_identity(text) == IDENTITY
    assert build_cache.parse_identity(text.replace("os_version_id=12", "os_version_id=")) == {
        **IDENTITY, "os_version_id": ""}  # a rolling release has no version
    assert build_cache.parse_identity(text.replace("libc=glibc 2.36", "libc=")) is None
    assert build_cache.parse_identity("") is None
