"""Deploy builds what the target can build; a program that does not build makes only the cells
that need it unavailable, naming the package; nothing built at all stops the campaign."""

from __future__ import annotations

import multiprocessing
import os
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

import jitterlab.programs
from jitterlab import plugins
from jitterlab.execution import deploy, preflight
from jitterlab.model.errors import UserError
from jitterlab.model.fakes import squarewave_cell
from jitterlab.model.registry import Entry
from jitterlab.targets.capabilities import CrossBuilt
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.registry import check_options as check_target_options


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


def test_a_program_that_does_not_build_is_left_out_and_retried(programs, tmp_path, monkeypatch):
    target = LocalTarget(workdir=str(tmp_path / "w"))
    done = deploy.deploy(target)
    assert "c-fifo" in done.built and "observer" in done.built and "c-broken" not in done.built
    assert "no-such-library.h" in done.build_error
    complete = Path(target.workdir, f"programs-{deploy.programs_hash()}")
    assert done.bindir == f"{complete}.partial" and not complete.exists()
    assert deploy.deploy(target) == done  # tried again: nothing more built, the same one serves
    # the user installs the library: the next campaign builds the rest, and keeps it
    (tmp_path / "inc").mkdir()
    (tmp_path / "inc" / "no-such-library.h").write_text("/* installed */\n")
    monkeypatch.setenv("CPATH", str(tmp_path / "inc"))
    again = deploy.deploy(target)
    assert again.bindir == str(complete) and again.built == done.built | {"c-broken"}
    assert again.build_error == "" and deploy.deploy(target) == again
    left = sorted(p.name for p in Path(target.workdir).iterdir())
    assert left == [complete.name, f"{complete.name}.partial"]


def _deploy_after(barrier, workdir: str, results) -> None:
    barrier.wait()
    done = deploy.deploy(LocalTarget(workdir=workdir))
    results.append((done.bindir, sorted(done.built)))


def test_jitterlabs_deploying_at_once_all_get_the_complete_build(tmp_path, monkeypatch):
    fork = multiprocessing.get_context("fork")
    for attempt in range(3):
        workdir = tmp_path / f"w{attempt}"
        cache = tmp_path / f"cache{attempt}"  # empty: all three build, and all three keep it
        monkeypatch.setenv("JITTERLAB_BUILD_CACHE", str(cache))
        barrier, results = fork.Barrier(3), fork.Manager().list()
        procs = [fork.Process(target=_deploy_after, args=(barrier, str(workdir), results)) for _ in range(3)]
        for p in procs:
            p.start()
        for p in procs:
            p.join(300)
        assert [p.exitcode for p in procs] == [0] * 3
        assert len(set(map(str, results))) == 1  # the same directory with the same programs
        bindir, built = results[0]
        assert {"observer", "c-fifo", "c-mmap", "c-file"} <= set(built)
        assert [p.name for p in workdir.iterdir()] == [Path(bindir).name]  # no build left behind
        assert Path(bindir, ".built").read_text() == "native\n"
        # the racing keepers leave one good entry, and nothing half-written beside it
        [entry] = [p for p in cache.iterdir() if not p.name.endswith(".lock")]
        with tarfile.open(entry) as tar:
            assert entry.suffix == ".tar" and tar.getnames()[-1] == "origin.json"


@pytest.mark.parametrize("cc", ["gcc -DX=`touch {f}`", "gcc; touch {f}", "gcc $(touch {f})", "gcc 'a b'",
                                "-gcc", "gcc -DX=$HOME", "gcc|tee {f}", ""])
def test_a_cc_that_a_shell_would_read_as_a_command_is_refused(tmp_path, cc):
    cc = cc.replace("{f}", str(tmp_path / "F"))
    with pytest.raises(UserError, match=r"t\[0\].cc: expected a compiler and its flags"):
        check_target_options("ssh", {"host": "b", "cc": cc}, "t[0]")
    with pytest.raises(UserError, match="expected a compiler"):
        deploy._cross_build("b", tmp_path, cc, 10)  # and where deploy gets a cc from elsewhere
    assert not (tmp_path / "F").exists()


def test_a_cc_with_flags_builds_with_them(tmp_path):
    cdir = tmp_path / "c"
    shutil.copytree(deploy.PROGRAMS_DIR / "c", cdir, ignore=shutil.ignore_patterns("*.o"))
    for built in cdir.iterdir():
        if built.is_file() and built.suffix == "" and built.name != "Makefile":
            built.unlink()
    deploy._cross_build("b", cdir, "gcc -DJL_FLAG=1 -O1", 120)
    assert (cdir / "c-fifo").exists() and not list(cdir.glob("*.o"))


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


def test_a_declared_directory_is_shipped_and_built_without_changing_deploy(programs, tmp_path, monkeypatch):
    """A plug-in with programs of its own declares their directory: deploy ships the files its
    patterns name (not build output, not other files), builds it when asked, and its executables
    count as built programs; a directory that only travels is not built."""
    firmware = programs / "firmware"
    firmware.mkdir()
    (firmware / "wave.S").write_text("; the coprocessor's wave\n")
    (firmware / "notes.txt").write_text("not a source\n")
    (firmware / "Makefile").write_text("all:\n\tprintf '#!/bin/sh\\n' > fw-load && chmod +x fw-load\n")
    scripts = programs / "scripts"
    scripts.mkdir()
    (scripts / "go.sh").write_text("#!/bin/sh\n")
    (scripts / "Makefile").write_text("all:\n\tfalse\n")  # never run: the directory is not built
    monkeypatch.setitem(jitterlab.programs.DIRS, "firmware",
                        jitterlab.programs.ProgramDir("firmware", ("*.S", "Makefile"), built=True))
    monkeypatch.setitem(jitterlab.programs.DIRS, "scripts",
                        jitterlab.programs.ProgramDir("scripts", ("*.sh",)))
    target = LocalTarget(workdir=str(tmp_path / "w"))
    done = deploy.deploy(target)
    assert "fw-load" in done.built and "c-fifo" in done.built and "c-broken" not in done.built
    shipped = Path(done.bindir)
    assert (shipped / "firmware" / "wave.S").is_file() and not (shipped / "firmware" / "notes.txt").exists()
    assert sorted(p.name for p in (shipped / "scripts").iterdir()) == ["go.sh"]
    before = deploy.programs_hash()
    (firmware / "notes.txt").write_text("changed, still not a source\n")
    assert deploy.programs_hash() == before, "only what ships makes the version"
    (firmware / "wave.S").write_text("; a new wave\n")
    assert deploy.programs_hash() != before


def test_every_declared_directory_exists_and_a_name_is_declared_once():
    assert {"c", "bash", "python", "node", "kmod"} <= set(jitterlab.programs.DIRS)
    for directory in jitterlab.programs.DIRS.values():
        assert list(deploy._sources()) and any(p.parent == directory.path for p in deploy._sources())
    c = jitterlab.programs.DIRS["c"]
    assert jitterlab.programs.declare(c) is c  # declaring the same again is harmless
    with pytest.raises(ValueError, match="declared twice"):
        jitterlab.programs.declare(jitterlab.programs.ProgramDir("c", ("*.c",)))
    with pytest.raises(ValueError, match="does not exist"):
        jitterlab.programs.declare(jitterlab.programs.ProgramDir("no-such-dir", ("*.c",)))
    assert "no-such-dir" not in jitterlab.programs.DIRS


@pytest.mark.slow
def test_two_runs_started_together_on_a_fresh_machine_both_measure(tmp_path):
    """Issue 14's report: one of two `jitterlab run` failed with "building the C programs failed"."""
    workdir = tmp_path / "fresh"
    campaign = tmp_path / "c.toml"
    campaign.write_text(f'[campaign]\nname = "t"\nduration = "300ms"\nrepetitions = 1\n[[target]]\n'
                        f'name = "local"\nkind = "local"\nworkdir = "{workdir}"\n[matrix]\nimpl = "c-mmap"\n'
                        'period = "10ms"\nprobe = "self"\n')
    procs = [subprocess.Popen([sys.executable, "-m", "jitterlab", "run", str(campaign), "--results",
                               str(tmp_path / f"r{i}")], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
             for i in range(2)]
    errors = [p.communicate(timeout=300)[1].decode() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], errors
    assert [p.name for p in workdir.iterdir() if p.name.startswith("programs-")] == [
        f"programs-{deploy.programs_hash()}"]


_FAKE_CROSS_GCC = r"""#!/bin/sh
# a cross gcc whose target architecture has no libgpiod here: links everything else
out=; prev=
for a; do [ "$prev" = -o ] && out=$a; prev=$a; done
for a; do
  if [ "$a" = -lgpiod ]; then
    echo "/usr/bin/aarch64-linux-gnu-ld: cannot find -lgpiod: No such file or directory" >&2
    echo "collect2: error: ld returned 1 exit status" >&2
    exit 1
  fi
done
printf '#!/bin/sh\n' > "$out" && chmod +x "$out"
"""


class CrossBuiltLocal(LocalTarget, CrossBuilt):
    def __init__(self, workdir: str, cc: str) -> None:
        super().__init__(workdir=workdir)
        self._cc = cc

    @property
    def cross_cc(self) -> str:
        return self._cc


@pytest.fixture
def fake_cross(tmp_path, monkeypatch) -> Path:
    """A cross toolchain on PATH (gcc and pkg-config of aarch64) and a host pkg-config, each logging."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "aarch64-linux-gnu-gcc").write_text(_FAKE_CROSS_GCC)
    for name in ("aarch64-linux-gnu-pkg-config", "pkg-config"):
        (bin_dir / name).write_text(f'#!/bin/sh\necho "$*" >> "{tmp_path}/{name}.log"\nexit 1\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return tmp_path


def test_a_cross_build_without_the_targets_library_leaves_out_only_its_program(fake_cross):
    target = CrossBuiltLocal(str(fake_cross / "w"), "aarch64-linux-gnu-gcc")
    done = deploy.deploy(target)
    assert {"c-fifo", "c-file", "observer"} <= done.built and "c-gpiod" not in done.built
    assert "cannot find -lgpiod" in done.build_error and done.cross_arch == "arm64"
    # the target's pkg-config was asked which libgpiod there is, never this machine's
    assert "libgpiod" in (fake_cross / "aarch64-linux-gnu-pkg-config.log").read_text()
    assert not (fake_cross / "pkg-config.log").exists()
    cells = [squarewave_cell("c-gpiod"), squarewave_cell("python"), squarewave_cell("c-fifo")]
    why = preflight.unbuilt(cells, done.built, done.build_error, done.cross_arch)
    assert list(why) == [cells[0].key]
    assert "cannot find -lgpiod" in why[cells[0].key]
    assert "dpkg --add-architecture arm64" in why[cells[0].key]
    assert "apt install libgpiod-dev:arm64" in why[cells[0].key]
    assert "libc6-dev" not in why[cells[0].key]


def test_without_a_cross_pkg_config_the_targets_multiarch_dirs_are_searched(tmp_path):
    args, env = deploy._pkg_config("arm-linux-gnueabihf-gcc -O2")
    assert args == ["PKG_CONFIG=pkg-config"] and env["PKG_CONFIG_PATH"] == ""
    assert env["PKG_CONFIG_LIBDIR"].split(":")[0] == "/usr/lib/arm-linux-gnueabihf/pkgconfig"
    args, env = deploy._pkg_config(f"aarch64-linux-gnu-gcc --sysroot={tmp_path}")
    assert env["PKG_CONFIG_SYSROOT_DIR"] == str(tmp_path)
    assert env["PKG_CONFIG_LIBDIR"].split(":")[0] == f"{tmp_path}/usr/lib/aarch64-linux-gnu/pkgconfig"
    assert deploy._pkg_config("gcc -O1") == ([], {})
    assert [deploy.cross_arch(cc) for cc in ("aarch64-linux-gnu-gcc-12", "arm-linux-gnueabihf-gcc", "gcc")] \
        == ["arm64", "armhf", ""]


def test_a_cross_build_that_builds_nothing_names_the_targets_libc(fake_cross, tmp_path):
    (fake_cross / "bin" / "aarch64-linux-gnu-gcc").write_text(
        "#!/bin/sh\necho 'ld: cannot find -lc: No such file or directory' >&2\nexit 1\n")
    with pytest.raises(UserError, match=r"cannot find -lc: .*apt install libc6-dev-arm64-cross"):
        deploy.deploy(CrossBuiltLocal(str(tmp_path / "w"), "aarch64-linux-gnu-gcc"))


def test_a_missing_cross_compiler_names_its_debian_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no compiler at all
    with pytest.raises(UserError) as e:
        deploy.deploy(CrossBuiltLocal(str(tmp_path / "w"), f"arm-linux-gnueabihf-gcc --sysroot={tmp_path}"))
    assert "arm-linux-gnueabihf-gcc is not installed on this machine" in str(e.value)
    assert "(apt install gcc-arm-linux-gnueabihf)" in str(e.value) and "\n" not in str(e.value)
