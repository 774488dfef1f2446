"""Deploy builds what the target can build; a program that does not build makes only the cells
that need it unavailable, naming the package; nothing built at all stops the campaign."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jitterlab import deploy, plugins, preflight
from jitterlab.errors import UserError
from jitterlab.fakes import squarewave_cell
from jitterlab.registry import Entry
from jitterlab.targets.local import LocalTarget


@pytest.fixture
def programs(tmp_path, monkeypatch) -> Path:
    """A copy of the program sources with a program that needs a library nobody has."""
    copy = tmp_path / "programs"
    shutil.copytree(deploy.PROGRAMS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.o"))
    for built in (copy / "c").iterdir():
        if built.is_file() and built.suffix == "" and built.name != "Makefile":
            built.unlink()
    (copy / "c" / "c_broken.c").write_text('#include <no-such-library.h>\nint main(void) { return 0; }\n')
    makefile = copy / "c" / "Makefile"
    makefile.write_text(makefile.read_text().replace(
        "PROGRAMS += $(UDP_PROGRAMS)", "PROGRAMS += $(UDP_PROGRAMS) c-broken") +
        "\nc-broken: c_broken.c\n\t$(CC) $(CFLAGS) -o $@ c_broken.c\n")
    monkeypatch.setattr(deploy, "PROGRAMS_DIR", copy)
    return copy


def test_a_program_that_does_not_build_is_left_out_and_retried(programs, tmp_path):
    target = LocalTarget(workdir=str(tmp_path / "w"))
    done = deploy.deploy(target)
    assert "c-fifo" in done.built and "observer" in done.built and "c-broken" not in done.built
    assert "no-such-library.h" in done.build_error
    assert not Path(done.bindir, ".built").exists()  # the next campaign tries again
    assert deploy.deploy(target).built == done.built


def test_cells_of_an_unbuilt_program_are_unavailable_with_the_package(monkeypatch):
    bash = plugins.IMPLS.get("bash", "test")
    broken = type(bash)(("c/c-broken",), build={"c-broken": "libno-such-dev"})
    monkeypatch.setitem(plugins.IMPLS._entries, "broken", Entry("broken", "test", broken))
    cells = [squarewave_cell("broken"), squarewave_cell("c-fifo")]
    why = preflight.unbuilt(cells, frozenset({"c-fifo", "observer"}), "c_broken.c: fatal error: x.h")
    assert list(why) == [cells[0].key]
    assert why[cells[0].key] == ("the target could not build c-broken (c_broken.c: fatal error: x.h); "
                                 "apt install libno-such-dev")


def test_nothing_built_is_a_user_error(programs, tmp_path):
    (programs / "c" / "sw_common.h").write_text("#error broken compiler\n")
    (programs / "c" / "udp_common.h").write_text("#error broken compiler\n")
    with pytest.raises(UserError, match=r"building the C programs failed: .*apt install gcc make"):
        deploy.deploy(LocalTarget(workdir=str(tmp_path / "w")))
