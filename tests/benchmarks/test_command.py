"""command: the user's own program as a benchmark — keys, placeholders, metric extraction, failures,
process groups, and a campaign with a load beside it."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from jitterlab.measure.benchmarks import command
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.params import word_list
from jitterlab.model.records import RunSettings
from jitterlab.targets.local import LocalTarget
from tests.support import campaign_from_toml, run_local_campaign, units_and_directions

FPS = 'name = "fps"\nregex = \'fps=([0-9.]+)\'\nunit = "1/s"\ndirection = "higher"\n'


def matrix(lines: str, metrics: str = FPS) -> str:
    """Matrix lines of a command cell and its [[matrix.metric]] tables (TOML text)."""
    tables = "".join(f"[[matrix.metric]]\n{m}" for m in metrics.split("---\n")) if metrics else ""
    return f'name = "t"\n{lines}\n{tables}'


def cells_of(lines: str, metrics: str = FPS, **campaign):
    return campaign_from_toml("command", matrix(lines, metrics), **campaign).cells


def error_of(lines: str, metrics: str = FPS) -> str:
    with pytest.raises(UserError) as info:
        cells_of(lines, metrics)
    return str(info.value)


# --- keys ------------------------------------------------------------------------------------


def test_lists_are_values_not_axes_and_variant_is_an_axis(tmp_path):
    script = tmp_path / "fps.py"
    script.write_text("")
    cells = cells_of(f'argv = ["python3", "fps.py", "{{duration_s}}"]\nfiles = ["{script}"]\n'
                     'variant = ["small", 2]\nbuild = ["true"]')
    assert len(cells) == 2
    first = dict(cells[0].params)
    assert word_list(first["argv"]) == ["python3", "fps.py", "{duration_s}"]
    assert word_list(first["files"]) == [str(script)]
    assert word_list(first["build"]) == ["true"]
    assert [c.param("variant") for c in cells] == ["small", 2]
    [spec] = command.metric_specs(cells[0])
    assert spec == {"name": "fps", "regex": "fps=([0-9.]+)", "unit": "1/s", "direction": "higher", "file": ""}
    bench = command.Command()
    assert bench.label(cells[0]) == "command t small idle"
    assert bench.tools(cells[0]) == {"python3": "python3", "true": "true"}


def test_two_tables_of_different_commands_are_different_cells():
    text = ('[campaign]\nname = "t"\n'
            '[[matrix]]\nbenchmark = "command"\nname = "a"\nargv = ["echo", "fps=1"]\n'
            f'[[matrix.metric]]\n{FPS}'
            '[[matrix]]\nbenchmark = "command"\nname = "b"\nargv = ["echo", "fps=2"]\n'
            f'[[matrix.metric]]\n{FPS}')
    import tomllib

    from jitterlab.campaign.file import parse_campaign

    campaign = parse_campaign(tomllib.loads(text), Path("c.toml"), text)
    assert [c.param("name") for c in campaign.cells] == ["a", "b"]


@pytest.mark.parametrize(
    ("lines", "metrics", "expected"),
    [
        ('argv = []', FPS, "c.toml: matrix.argv: 0 items is out of range"),
        ('argv = "python3 fps.py"', FPS, "c.toml: matrix.argv: expected a list of strings"),
        ('argv = ["x", 3]', FPS, "c.toml: matrix.argv: expected a list of strings"),
        ('argv = ["x", "{durations}"]', FPS, "c.toml: matrix.argv: unknown placeholder {durations} in "
                                            "'{durations}'; known: {duration_s}"),
        ('argv = ["x", "a{b"]', FPS, "c.toml: matrix.argv: lone '{' in 'a{b'; write {{ or }}"),
        ('argv = ["x"]\nbuild = ["make", "{nope}"]', FPS, "c.toml: matrix.build: unknown placeholder {nope}"),
        ('argv = ["x"]\nfiles = ["no/such/file.py"]', FPS,
         f"c.toml: matrix.files: no/such/file.py does not exist (a relative path starts at {os.getcwd()})"),
        ('argv = ["x"]', "", "c.toml: matrix.metric: missing; benchmark 'command' needs it"),
        ('argv = ["x"]', 'name = "fps"\ndirection = "higher"\n',
         "c.toml: matrix.metric[0]: give exactly one of regex"),
        ('argv = ["x"]', 'name = "fps"\nregex = "fps=[0-9]+"\ndirection = "higher"\n',
         "c.toml: matrix.metric[0].regex: put the number in a group"),
        ('argv = ["x"]', 'name = "fps"\nregex = "fps=(["\ndirection = "higher"\n',
         "c.toml: matrix.metric[0].regex: not a regular expression"),
        ('argv = ["x"]', 'name = "fps"\njson_path = "fps"\ndirection = "higher"\n',
         "c.toml: matrix.metric[0].json_path: a JSON path starts with $"),
        ('argv = ["x"]', 'name = "fps"\njson_path = "$.a..b"\ndirection = "higher"\n',
         "c.toml: matrix.metric[0].json_path: cannot read '$.a..b' from '..b' on"),
        ('argv = ["x"]', 'name = "fps"\nregex = "(1)"\n',
         "c.toml: matrix.metric[0].direction: say which way"),
        ('argv = ["x"]', 'name = "Fps/s"\nregex = "(1)"\ndirection = "none"\n',
         "c.toml: matrix.metric[0].name:"),
        ('argv = ["x"]', 'name = "load_x"\nregex = "(1)"\ndirection = "none"\n', "not starting with load_"),
        ('argv = ["x"]', 'name = "a"\nregex = "(1)"\ndirection = "none"\nscale = "2"\n',
         "c.toml: matrix.metric[0].scale: unknown key"),
        ('argv = ["x"]', 'name = "a"\nregex = "(1)"\ndirection = "none"\nfile = "../x"\n',
         "c.toml: matrix.metric[0].file: a file the program writes in its working directory"),
        ('argv = ["x"]', f"{FPS}---\n{FPS}", "c.toml: matrix.metric: two metrics are named the same"),
        ('argv = ["x"]\npackage = "Python 3"', FPS, "c.toml: matrix.package: expected a Debian package name"),
    ],
)
def test_bad_keys_are_one_line_errors_naming_the_key(lines, metrics, expected):
    message = error_of(lines, metrics)
    assert expected in message and "\n" not in message


def test_the_argv_key_is_required_and_named_in_a_list_of_tables():
    import tomllib

    from jitterlab.campaign.file import parse_campaign

    text = f'[campaign]\nname = "t"\n[[matrix]]\nbenchmark = "command"\nname = "a"\n[[matrix.metric]]\n{FPS}'
    with pytest.raises(UserError, match=r"c.toml: matrix\[0\].argv: missing; benchmark 'command' needs it"):
        parse_campaign(tomllib.loads(text), Path("c.toml"), text)


def test_files_with_the_same_name_are_refused(tmp_path):
    (tmp_path / "a").mkdir(), (tmp_path / "b").mkdir()
    (tmp_path / "a" / "x.py").write_text(""), (tmp_path / "b" / "x.py").write_text("")
    message = error_of(f'argv = ["x"]\nfiles = ["{tmp_path}/a/x.py", "{tmp_path}/b/x.py"]')
    assert "c.toml: matrix.files: two files are named 'x.py' in the working directory" in message


# --- placeholders and reading the output -----------------------------------------------------


def test_substitution_is_per_word_and_braces_escape():
    values = {"duration_s": "1.5", "variant": "a b; rm -rf / $(x) `y`", "name": "n"}
    assert command.substitute("--t={duration_s}s", values) == "--t=1.5s"
    assert command.substitute("{variant}", values) == "a b; rm -rf / $(x) `y`"
    assert command.substitute("{{variant}} {{", values) == "{variant} {"


@pytest.mark.parametrize(("ns", "s", "ms", "whole"), [
    (10_000_000_000, "10", "10000", "10"), (500_000_000, "0.5", "500", "1"),
    (1_234_567_891, "1.234567891", "1234.567891", "2"), (1_000, "0.000001", "0.001", "1"),
])
def test_duration_placeholders_are_exact(ns, s, ms, whole, tmp_path):
    [cell] = cells_of('argv = ["x"]')
    ctx = context(cell, tmp_path, LocalTarget(workdir=str(tmp_path)), duration_ns=ns)
    values = command.placeholder_values(ctx)
    assert (values["duration_s"], values["duration_ms"], values["duration_whole_s"]) == (s, ms, whole)
    assert values["duration_ns"] == str(ns) and values["cpus"] == "0,1" and values["repetition"] == "2"


def spec(**keys: str) -> dict[str, str]:
    return {"name": "m", "unit": "", "file": "", "direction": "none", **keys}


def test_regex_takes_the_last_match_and_json_the_path():
    text = "warming up fps=1.0\nfps=2.5\nsummary fps=31.25\n"
    assert command.read_metric(spec(regex=r"fps=([0-9.]+)"), text, "out") == 31.25
    doc = {"runs": [{"fps": 1}, {"fps": 2.5e3, "odd key": -4}], "ok": True}
    assert command.read_metric(spec(json_path="$.runs[1].fps"), json.dumps(doc), "out") == 2500.0
    assert command.read_metric(spec(json_path='$.runs[1]["odd key"]'), json.dumps(doc), "out") == -4.0
    noisy = "starting\n" + json.dumps({"fps": 1}) + "\n" + json.dumps(doc) + "\ndone\n"
    assert command.read_metric(spec(json_path="$.runs[0].fps"), noisy, "out") == 1.0
    assert command.read_metric(spec(json_path="$[2]"), "[1, 2, 7]", "out") == 7.0


@pytest.mark.parametrize(
    ("keys", "text", "reason"),
    [
        ({"regex": r"fps=([0-9.]+)"}, "nothing here\n",
         "metric m: regex 'fps=([0-9.]+)' matched nothing in out"),
        ({"regex": r"fps=(\S*)"}, "fps=abc\n",
         "metric m: regex 'fps=(\\\\S*)' found 'abc' in out, not a number"),
        ({"regex": r"fps=(\S+)"}, "fps=nan\n", "metric m: nan in out is not a finite number"),
        ({"json_path": "$.fps"}, "fps: 3\n", "metric m: out is not JSON and has no line of JSON"),
        ({"json_path": "$.fps"}, '{"fpx": 3}', "metric m: out has nothing at $.fps (no 'fps')"),
        ({"json_path": "$.a[3]"}, '{"a": [1]}', "metric m: out has nothing at $.a[3] (no 3)"),
        ({"json_path": "$.fps"}, '{"fps": "3"}', 'metric m: $.fps in out is "3", not a number'),
        ({"json_path": "$.fps"}, '{"fps": true}', "metric m: $.fps in out is true, not a number"),
    ],
)
def test_unreadable_metrics_say_why(keys, text, reason):
    with pytest.raises(RunFailed) as info:
        command.read_metric(spec(**keys), text, "out")
    assert info.value.reason == reason


# --- runs on this machine --------------------------------------------------------------------


def context(cell, tmp_path: Path, target, duration_ns: int = 1_000_000_000, run_timeout_ns: int = 20 * 10**9):
    scratch, local = tmp_path / "scratch", tmp_path / "local"
    scratch.mkdir(exist_ok=True), local.mkdir(exist_ok=True)
    settings = RunSettings(duration_ns=duration_ns, run_timeout_ns=run_timeout_ns)
    return RunContext(target, settings, cell, 2, str(scratch), local, "/b", Placement((0, 1), None), True)


PROGRAM = textwrap.dedent("""\
    import json, os, sys
    json.dump({"argv": sys.argv[1:], "n": len(sys.argv) - 1, "cwd": os.getcwd()}, open("argv.json", "w"))
    print("frames done fps=%s" % (len(sys.argv) * 10))
    print(json.dumps({"stats": {"latency_ns": [5, 7]}}))
""")


def write_program(tmp_path: Path, name: str = "prog.py", text: str = PROGRAM) -> Path:
    path = tmp_path / "src" / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def execute(tmp_path: Path, lines: str, metrics: str = FPS, **settings):
    [cell] = cells_of(lines, metrics)
    target = LocalTarget(workdir=str(tmp_path / "wd"))
    ctx = context(cell, tmp_path, target, **settings)
    try:
        return command.Command().execute(ctx), ctx
    finally:
        target.close()


def test_a_hostile_value_stays_one_argv_word(tmp_path):
    program = write_program(tmp_path)
    hostile = "a b; touch PWNED $(touch PWNED2) `touch PWNED3` 'q\" *"
    lines = (f'argv = ["python3", "prog.py", "--s={{duration_s}}", "{{variant}}"]\n'
             f'files = ["{program}"]\nvariant = {json.dumps(hostile)}')
    latency = 'name = "lat"\njson_path = "$.stats.latency_ns[1]"\nunit = "ns"\ndirection = "lower"\n'
    measurement, ctx = execute(tmp_path, lines, f"{FPS}---\n{latency}", duration_ns=1_500_000_000)
    seen = json.loads((Path(ctx.scratch) / "argv.json").read_text())
    assert seen == {"argv": ["--s=1.5", hostile], "n": 2, "cwd": ctx.scratch}
    assert not list(Path(ctx.scratch).glob("PWNED*")) and not list(Path.cwd().glob("PWNED*"))
    assert [(m.name, m.value, m.unit, m.direction) for m in measurement.metrics] == [
        ("fps", 30.0, "1/s", "higher"), ("lat", 7.0, "ns", "lower")]


def test_metric_from_a_file_the_program_writes(tmp_path):
    program = write_program(tmp_path)
    from_file = 'name = "first"\njson_path = "$.argv[0]"\nfile = "argv.json"\ndirection = "none"\n'
    count = 'name = "n"\njson_path = "$.n"\nfile = "argv.json"\ndirection = "none"\n'
    lines = f'argv = ["python3", "prog.py", "a", "b c"]\nfiles = ["{program}"]'
    measurement, _ = execute(tmp_path / "a", lines, f"{count}---\n{FPS}")
    assert [(m.name, m.value) for m in measurement.metrics] == [("n", 2.0), ("fps", 30.0)]
    with pytest.raises(RunFailed) as info:
        execute(tmp_path / "b", f'argv = ["python3", "prog.py", "x"]\nfiles = ["{program}"]', from_file)
    assert info.value.reason == ('metric first: $.argv[0] in argv.json (written by the program) is "x", '
                                 "not a number")
    assert set(info.value.attachments) == {"command.log", "out-argv.json"}


def test_an_executable_file_stays_executable_and_needs_no_package(tmp_path):
    program = write_program(tmp_path, "run.sh", "#!/bin/sh\necho fps=7\n")
    program.chmod(0o755)
    [cell] = cells_of(f'argv = ["./run.sh"]\nfiles = ["{program}"]')
    assert command.Command().tools(cell) == {}
    measurement, _ = execute(tmp_path, f'argv = ["./run.sh"]\nfiles = ["{program}"]')
    assert measurement.metrics[0].value == 7.0


def test_build_step_runs_in_the_working_directory(tmp_path):
    program = write_program(tmp_path, "gen.sh", "printf 'echo fps=%s\\n' \"$1\" > run.sh\n")
    measurement, ctx = execute(tmp_path, f'argv = ["sh", "run.sh"]\nfiles = ["{program}"]\n'
                                         'build = ["sh", "gen.sh", "{duration_ms}"]', duration_ns=250_000_000)
    assert measurement.metrics[0].value == 250.0
    assert (Path(ctx.scratch) / "run.sh").exists()


def test_a_failing_build_fails_the_run_with_its_output(tmp_path):
    with pytest.raises(RunFailed) as info:
        execute(tmp_path, 'argv = ["true"]\nbuild = ["sh", "-c", "echo no compiler here; exit 3"]')
    assert info.value.reason == "the build step failed (exit status 3): no compiler here"
    assert info.value.attachments == {"build.log": b"no compiler here\n"}


def test_unreadable_metric_fails_the_run_and_attaches_the_output(tmp_path):
    with pytest.raises(RunFailed) as info:
        execute(tmp_path, 'argv = ["echo", "fps: twelve"]')
    assert info.value.reason == "metric fps: regex 'fps=([0-9.]+)' matched nothing in the program's output"
    assert info.value.status == "failed"
    assert info.value.attachments == {"command.log": b"fps: twelve\n"}


def test_a_program_that_fails_fails_the_run(tmp_path):
    with pytest.raises(RunFailed) as info:
        execute(tmp_path, 'argv = ["sh", "-c", "echo fps=3; echo cannot open camera >&2; exit 4"]')
    assert info.value.reason == "command t failed (exit status 4): cannot open camera"
    assert info.value.attachments["command.log"] == b"fps=3\ncannot open camera\n"


def test_timeout_stops_the_program_and_keeps_its_output(tmp_path):
    with pytest.raises(RunFailed) as info:
        execute(tmp_path, 'argv = ["sh", "-c", "echo started; exec sleep 600"]',
                duration_ns=100_000_000, run_timeout_ns=100_000_000)
    assert info.value.status == "timeout"
    assert "still running" in info.value.reason and "duration + campaign.run_timeout" in info.value.reason
    assert info.value.attachments == {"command.log": b"started\n"}


def test_children_that_outlive_the_program_are_stopped_with_its_group(tmp_path):
    script = "sleep 600 & echo $! > child.pid; echo fps=1"
    measurement, ctx = execute(tmp_path, f'argv = ["sh", "-c", {json.dumps(script)}]')
    assert measurement.metrics[0].value == 1.0
    child = int((Path(ctx.scratch) / "child.pid").read_text())
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.slow
def test_a_campaign_with_a_load_beside_it(tmp_path):
    program = write_program(tmp_path)
    rc, store = run_local_campaign(tmp_path, f"""
[matrix]
benchmark = "command"
name = "t"
argv = ["python3", "prog.py", "{{variant}}"]
files = ["{program}"]
variant = ["a", "b c"]
load = ["idle", "cpu"]
[[matrix.metric]]
{FPS}""", name="cmd", duration="300ms")
    assert rc == 0
    runs = store.runs()
    assert sorted((r.load, r.param("variant")) for r in runs) == [
        ("cpu", "a"), ("cpu", "b c"), ("idle", "a"), ("idle", "b c")]
    for run in runs:
        assert run.status == "ok", run.error
        assert units_and_directions(run) == {"fps": ("1/s", "higher")}
        assert run.metric("fps", "") == 20.0  # python3 prog.py VARIANT: two words, whatever VARIANT holds
    loaded = next(r for r in runs if r.load == "cpu")
    assert any(name.startswith("load_") for _, name in loaded.metrics)


def test_compare_grades_a_command_metric_by_its_declared_direction(tmp_path):
    from jitterlab.analysis.compare import Selector, compare
    from jitterlab.model.fakes import cell, run_record
    from jitterlab.model.records import Metric
    from jitterlab.store.catalog import Store

    store = Store(tmp_path)
    for image, fps, lag in (("a", 100.0, 9.0), ("b", 120.0, 20.0)):
        cid = store.new_campaign(f"cmd-{image}", "fp", "c.toml", "", {"image": image})
        for rep in range(5):
            metrics = [Metric("fps", fps + rep, "1/s", "", "higher"),
                       Metric("lag_ms", lag + rep, "ms", "", "lower")]
            store.commit_run(run_record(cell("command", {"name": "stack-fps"}), id=f"{image}{rep}",
                                        campaign_id=cid, repetition=rep, metrics=metrics, cell_key="c",
                                        labels={"image": image}))
    rows = {r.metric: r for r in compare(store.runs(), Selector("image", "a"), Selector("image", "b")).rows}
    assert (rows["fps"].direction, rows["fps"].verdict) == ("higher", "better")
    assert (rows["lag_ms"].direction, rows["lag_ms"].verdict) == ("lower", "worse")



# --- hostile input: refused when the campaign is read, or failing only its own run -----------


def cli_run(tmp_path: Path, capsys, matrix_lines: str, *options: str, repetitions: int = 1):
    """`jitterlab run` of a command campaign on this machine: (exit status, stderr, results dir)."""
    from jitterlab.cli.main import main
    from tests.support import local_campaign

    path = local_campaign(tmp_path, f'[[matrix]]\nbenchmark = "command"\n{matrix_lines}',
                          name="hostile", duration="100ms", repetitions=repetitions)
    capsys.readouterr()
    rc = main(["run", str(path), "--results", str(tmp_path / "results"), *options])
    return rc, capsys.readouterr().err, tmp_path / "results"


def stored_runs(results: Path) -> dict:
    """The stored runs by (name, repetition)."""
    from jitterlab.store.catalog import Store

    return {(r.param("name"), r.repetition): r for r in Store(results, create=False).runs()}


def left_in_workdir(tmp_path: Path) -> list[Path]:
    runs = tmp_path / "target" / "runs"
    return sorted(runs.rglob("*")) if runs.exists() else []


def special_tree(tmp_path: Path, kind: str) -> Path:
    """A directory to ship holding one entry of `kind` besides a regular file."""
    tree = tmp_path / f"tree-{kind}"
    tree.mkdir()
    (tree / "ok.txt").write_text("x")
    if kind == "fifo":
        os.mkfifo(tree / "pipe")
    elif kind == "device-link":
        (tree / "zero").symlink_to("/dev/zero")
    elif kind == "outside-link":
        (tree / "up").symlink_to("..")
    elif kind == "socket":
        import socket

        with socket.socket(socket.AF_UNIX) as sock:
            sock.bind(str(tree / "sock"))
    return tree


def with_fps(lines: str) -> str:
    return f'name = "t"\n{lines}\n[[matrix.metric]]\n{FPS}'


@pytest.mark.parametrize(("item", "says"), [
    ("/dev/zero", "/dev/zero is a character device; ship only regular files and directories"),
    ("/", "'/' is the root directory; name the files the program needs"),
    ("..", "'..' does not end in a file or directory name; name the directory itself"),
    (".", "'.' does not end in a file or directory name"),
    ("x/..", "'x/..' does not end in a file or directory name"),
    ("", "an empty path"),
    ("/proc/self/status", "/proc/self/status is under /proc"),
    ("tree-fifo", "pipe is a FIFO (named pipe); ship only regular files and directories"),
    ("tree-socket", "sock is a socket"),
    ("tree-device-link", "zero is a symbolic link inside a shipped directory, which is not followed"),
    ("tree-outside-link", "up is a symbolic link inside a shipped directory"),
])
def test_files_that_are_no_regular_file_or_directory_are_refused_when_read(tmp_path, capsys, monkeypatch,
                                                                           item, says):
    monkeypatch.chdir(tmp_path)
    if item.startswith("tree-"):
        item = str(special_tree(tmp_path, item.removeprefix("tree-")))
    rc, err, _ = cli_run(tmp_path, capsys, with_fps(f'argv = ["true"]\nfiles = [{json.dumps(item)}]'))
    assert rc == 2, err
    assert err.startswith(f"error: {tmp_path / 'c.toml'}: matrix[0].files: ") and err.count("\n") == 1, err
    assert says in err, err
    assert not (tmp_path / "target").exists() and not (tmp_path / "results").exists()


def test_a_named_symbolic_link_is_followed(tmp_path):
    program = write_program(tmp_path, "run.sh", "echo fps=9\n")
    (tmp_path / "link.sh").symlink_to(program)
    measurement, _ = execute(tmp_path, f'argv = ["sh", "link.sh"]\nfiles = ["{tmp_path / "link.sh"}"]')
    assert measurement.metrics[0].value == 9.0


def test_files_over_the_bounds_are_refused_when_read(tmp_path, capsys, monkeypatch):
    from jitterlab.measure.command import files as command_files

    tree = tmp_path / "tree"
    tree.mkdir()
    for i in range(6):
        (tree / f"f{i}").write_text("x" * 100)
    lines = with_fps(f'argv = ["echo", "fps=1"]\nfiles = ["{tree}"]')
    monkeypatch.setattr(command_files, "MAX_FILES_ENTRIES", 5)
    rc, err, _ = cli_run(tmp_path, capsys, lines)
    assert rc == 2 and err.count("\n") == 1, err
    assert "matrix[0].files: more than 5 files and directories to copy" in err, err
    monkeypatch.setattr(command_files, "MAX_FILES_ENTRIES", 100)
    monkeypatch.setattr(command_files, "MAX_FILES_BYTES", 500)
    rc, err, _ = cli_run(tmp_path, capsys, lines)
    assert rc == 2 and "matrix[0].files: more than 500 bytes to copy" in err, err
    monkeypatch.setattr(command_files, "MAX_FILES_BYTES", 600)
    rc, err, _ = cli_run(tmp_path, capsys, lines)
    assert rc == 0, err


def test_a_file_that_turned_into_a_fifo_fails_its_run_not_the_campaign(tmp_path, capsys):
    data = tmp_path / "data.txt"
    data.write_text("frames\n")
    # the first run turns the shipped file into a FIFO, which a copy would wait on forever
    script = f"rm {data} && mkfifo {data}; echo fps=5"
    rc, err, results = cli_run(tmp_path, capsys, with_fps(f'argv = ["sh", "-c", {json.dumps(script)}]\n'
                                                          f'files = ["{data}"]'), repetitions=2)
    assert rc == 1, err
    runs = stored_runs(results)
    assert runs["t", 0].status == "ok" and runs["t", 0].metric("fps", "") == 5.0
    assert runs["t", 1].status == "failed"
    assert runs["t", 1].error == (f"files: {data} is a FIFO (named pipe); ship only regular files and "
                                  "directories")
    assert not left_in_workdir(tmp_path)


def test_a_copy_that_fails_fails_its_run_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    import errno

    from jitterlab.targets.local import LocalTarget

    data = tmp_path / "data.txt"
    data.write_text("frames\n")
    real_put = LocalTarget.put

    def put(self, local, remote):
        real_put(self, local, remote)  # a part of it there, then the disk is full
        if Path(local) == data:
            raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(LocalTarget, "put", put)
    tables = (with_fps(f'argv = ["echo", "fps=1"]\nfiles = ["{data}"]').replace('name = "t"', 'name = "a"')
              + '[[matrix]]\nbenchmark = "command"\n' + with_fps('argv = ["echo", "fps=2"]'))
    rc, err, results = cli_run(tmp_path, capsys, tables)
    assert rc == 1, err
    runs = stored_runs(results)
    assert runs["t", 0].status == "ok" and runs["t", 0].metric("fps", "") == 2.0
    assert runs["a", 0].status == "failed"
    assert runs["a", 0].error == (f"files: could not copy {data} to the working directory: "
                                  "No space left on device")
    assert not left_in_workdir(tmp_path)


@pytest.mark.parametrize(("lines", "metrics", "says"), [
    ('build = [""]', FPS, "c.toml: matrix.build: the first word (the program to run) is empty; name it"),
    ('build = ["", "x"]', FPS, "c.toml: matrix.build: the first word (the program to run) is empty"),
    ("", 'name = "a"\nregex = "(1)"\ndirection = "none"\nfile = "."\n',
     "c.toml: matrix.metric[0].file: a file the program writes in its working directory"),
    ("", 'name = "a"\nregex = "(1)"\ndirection = "none"\nfile = "./"\n',
     "c.toml: matrix.metric[0].file: a file the program writes in its working directory"),
    ("", 'name = "a"\nregex = "(1)"\ndirection = "none"\nfile = ""\n',
     "c.toml: matrix.metric[0].file: a file the program writes in its working directory"),
])
def test_an_empty_build_and_a_metric_file_that_names_no_file_are_refused(lines, metrics, says):
    message = error_of(f'argv = ["x"]\n{lines}', metrics)
    assert says in message and "\n" not in message


def test_a_metric_file_in_a_subdirectory_is_accepted():
    [cell] = cells_of('argv = ["x"]', 'name = "a"\nregex = "(1)"\ndirection = "none"\nfile = "out/r.txt"\n')
    assert command.metric_specs(cell)[0]["file"] == "out/r.txt"


def test_an_argv_longer_than_a_command_line_carries_is_refused_at_dry_run(tmp_path, capsys):
    long = "a" * (128 << 10)
    # (the campaign names a table's key by its index when reading it, not when checking its cells)
    for lines, key in ((f'argv = ["echo", "{long}"]', "matrix[0].argv"),
                       (f'argv = ["echo", "{{variant}}"]\nvariant = "{long}"', "matrix.argv"),  # {variant}
                       (f'argv = ["true"]\nbuild = ["echo", "{long}"]', "matrix[0].build")):
        rc, err, _ = cli_run(tmp_path, capsys, with_fps(lines), "--dry-run")
        assert rc == 2 and err.count("\n") == 1, err[:300]
        assert f"c.toml: {key}: the command is " in err, err[:300]
        assert "over the 64 KiB a command line carries to every target" in err, err[:300]
    short = "a" * (60 << 10)
    rc, err, _ = cli_run(tmp_path, capsys, with_fps(f'argv = ["echo", "fps=1", "{short}"]'))
    assert rc == 0, err


def test_deeply_nested_json_fails_the_run_and_the_campaign_goes_on(tmp_path, capsys):
    nested = 'name = "n"\njson_path = "$.n"\ndirection = "none"\n'
    tables = (f'name = "a"\nargv = ["echo", "{{{{\\"n\\": 1}}}}"]\n[[matrix.metric]]\n{nested}'
              '[[matrix]]\nbenchmark = "command"\nname = "b"\n'
              f'argv = ["python3", "-c", "print(\'[\' * 200000)"]\n[[matrix.metric]]\n{nested}')
    rc, err, results = cli_run(tmp_path, capsys, tables)
    assert rc == 1, err
    runs = stored_runs(results)
    assert runs["a", 0].status == "ok" and runs["a", 0].metric("n", "") == 1.0
    assert runs["b", 0].status == "failed"
    assert runs["b", 0].error == ("metric n: the program's output is not JSON and has no line of JSON "
                                  "(JSON nested too deeply to read is skipped)")
    assert (results / runs["b", 0].attachments["command.log"]).read_bytes() == b"[" * 200000 + b"\n"


@pytest.fixture
def small_bounds(monkeypatch):
    from jitterlab.measure.command import output as command_output

    monkeypatch.setattr(command_output, "HEAD_BYTES", 1000)
    monkeypatch.setattr(command_output, "TAIL_BYTES", 3000)


NOISE = "import sys\nprint('fps=1 started')\nfor i in range(20000):\n    print('frame', i)\n"


def test_a_long_output_is_kept_cut_and_the_stored_run_says_so(tmp_path, capsys, small_bounds):
    program = write_program(tmp_path, "noisy.py", NOISE + "sys.exit(3)\n")
    lines = with_fps(f'argv = ["python3", "noisy.py"]\nfiles = ["{program}"]')
    rc, err, results = cli_run(tmp_path, capsys, lines)
    assert rc == 1, err
    run = stored_runs(results)["t", 0]
    total = len(b"fps=1 started\n") + sum(len(f"frame {i}\n") for i in range(20000))
    assert run.error == (f"command t failed (exit status 3): frame 19999 (command.log keeps the first 1000 "
                         f"bytes and the last 3000 bytes of {total} bytes; {total - 4000} bytes "
                         "left out)")
    kept = (results / run.attachments["command.log"]).read_bytes()
    assert kept.startswith(b"fps=1 started\nframe 0\n") and kept.endswith(b"frame 19999\n")
    assert f"\n[... {total - 4000} bytes left out here ...]\n".encode() in kept and len(kept) < 4100


def test_metrics_of_a_long_output_are_read_from_its_end(tmp_path, small_bounds):
    program = write_program(tmp_path, "noisy.py", NOISE + "print('fps=250')\n")
    measurement, _ = execute(tmp_path / "a", f'argv = ["python3", "noisy.py"]\nfiles = ["{program}"]')
    assert measurement.metrics[0].value == 250.0
    [warning] = measurement.warnings
    assert "its metrics were read from the last 3000 bytes of its output" in warning.message
    # the only match is in the part left out: no number rather than an early one
    program = write_program(tmp_path, "noisy.py", NOISE)
    with pytest.raises(RunFailed) as info:
        execute(tmp_path / "b", f'argv = ["python3", "noisy.py"]\nfiles = ["{program}"]')
    assert info.value.reason.startswith("metric fps: regex 'fps=([0-9.]+)' matched nothing in the last 3000 "
                                        "bytes of the program's output (")
    assert len(info.value.attachments["command.log"]) < 4100


def test_a_timed_out_program_keeps_a_bounded_output(tmp_path, small_bounds):
    script = "i=0; while [ $i -lt 3000 ]; do echo line $i; i=$((i+1)); done; exec sleep 600"
    with pytest.raises(RunFailed) as info:
        execute(tmp_path, f'argv = ["sh", "-c", {json.dumps(script)}]',
                duration_ns=100_000_000, run_timeout_ns=1_000_000_000)
    assert info.value.status == "timeout" and "command.log keeps the first 1000 bytes" in info.value.reason
    kept = info.value.attachments["command.log"]
    assert kept.startswith(b"line 0\n") and kept.endswith(b"line 2999\n") and len(kept) < 4100


def test_over_ssh_the_bounds_hold(sshd, tmp_path, small_bounds):
    """The longest command the bound lets through reaches an ssh target; a long output is cut there."""
    from jitterlab.targets.registry import TARGETS
    from jitterlab.targets.ssh.loopback_sshd import available

    if available() is not None:
        pytest.skip(str(available()))
    target = TARGETS.get("ssh", "test")("board", sshd.options(workdir=str(tmp_path / "work")))
    try:
        long = "'" * ((command.MAX_COMMAND_BYTES - 400) // 5)  # each ' quoted takes 5 bytes
        program = write_program(tmp_path, "noisy.py", NOISE + "print('fps=%d' % len(sys.argv[1]))\n")
        [cell] = cells_of(f'argv = ["python3", "noisy.py", {json.dumps(long)}]\nfiles = ["{program}"]')
        ctx = context(cell, tmp_path, target)
        target.run(["mkdir", "-p", ctx.scratch])
        measurement = command.Command().execute(ctx)
        assert measurement.metrics[0].value == len(long)
        assert "the last 3000 bytes of its output" in measurement.warnings[0].message
    finally:
        target.close()


def test_a_command_that_cannot_start_fails_its_run(tmp_path, monkeypatch):
    monkeypatch.setattr(command, "MAX_COMMAND_BYTES", 1 << 20)  # past the check, to the kernel's limit
    with pytest.raises(RunFailed) as info:
        execute(tmp_path, f'argv = ["echo", "{"a" * (200 << 10)}"]')
    assert info.value.reason == "command t could not start: Argument list too long"


def test_a_directory_holding_the_working_directory_is_not_copied_into_itself(tmp_path):
    shipped = tmp_path / "project"
    shipped.mkdir()
    with pytest.raises(RunFailed) as info:
        execute(shipped, f'argv = ["true"]\nfiles = ["{shipped}"]')  # its scratch is in shipped/
    assert info.value.reason.startswith(f"files: {shipped} holds the run's working directory")
    assert not (shipped / "scratch" / "project").exists()
