"""What came from a target (or a cache) is unpacked under its destination only, with Python's own
"data" filter (3.11.4 and later) and with the same refusals made by hand on an older 3.11 (Debian
12's python3 is 3.11.2, which has no filter argument)."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from jitterlab.targets.base import extract_all


@pytest.fixture(params=["python's filter", "by hand"])
def way(request, monkeypatch):
    if request.param == "by hand":
        monkeypatch.delattr(tarfile, "data_filter", raising=False)
    elif not hasattr(tarfile, "data_filter"):
        pytest.skip("this Python has no data filter")
    return request.param


def archive(path: Path, members: list[tarfile.TarInfo | tuple[str, bytes]]) -> Path:
    with tarfile.open(path, "w") as tar:
        for m in members:
            if isinstance(m, tarfile.TarInfo):
                tar.addfile(m)
            else:
                info = tarfile.TarInfo(m[0])
                info.size = len(m[1])
                tar.addfile(info, io.BytesIO(m[1]))
    return path


def link(name: str, to: str, kind: bytes = tarfile.SYMTYPE) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, to
    return info


@pytest.mark.parametrize("stream", [False, True])
def test_a_tree_is_unpacked_whole(tmp_path, way, stream):
    path = archive(tmp_path / "a.tar", [("tree/c/prog", b"\x7fELF"), ("tree/.built", b"native\n"),
                                        link("tree/c/alias", "prog")])
    with tarfile.open(path, "r|" if stream else "r") as tar:
        extract_all(tar, tmp_path / "out")
    assert (tmp_path / "out/tree/c/prog").read_bytes() == b"\x7fELF"
    assert (tmp_path / "out/tree/.built").read_text() == "native\n"
    assert (tmp_path / "out/tree/c/alias").resolve() == (tmp_path / "out/tree/c/prog").resolve()


@pytest.mark.parametrize("member", [("../escaped", b"x"), ("/tmp/absolute-from-a-tar", b"x"),
                                    link("up", "../../etc/passwd"), link("abs", "/etc/passwd"),
                                    link("hard", "/etc/passwd", tarfile.LNKTYPE)],
                         ids=["dotdot", "absolute", "symlink up", "symlink absolute", "hard link"])
def test_nothing_lands_outside(tmp_path, way, member):
    path = archive(tmp_path / "a.tar", [member])
    out = tmp_path / "out"
    out.mkdir()
    try:
        with tarfile.open(path) as tar:
            extract_all(tar, out)
        refused = False
    except tarfile.TarError:
        refused = True
    assert not (tmp_path / "escaped").exists() and not Path("/tmp/absolute-from-a-tar").exists()
    # Python's filter puts an absolute name under the destination instead (its leading / dropped)
    kept_inside = way == "python's filter" and isinstance(member, tuple) and member[0].startswith("/")
    assert refused != kept_inside
    assert [p.relative_to(out) for p in out.rglob("*") if p.is_file() or p.is_symlink()] == (
        [Path("tmp/absolute-from-a-tar")] if kept_inside else [])
