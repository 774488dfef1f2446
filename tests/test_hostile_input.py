"""A sweep over every key of the campaign format and every option of the command line with wrong
types, huge values, empty values and hostile strings: each is accepted (README, "Limits") or refused
with one line (exit 2) — never a traceback, never a hang, never an echo of the whole input."""

from __future__ import annotations

import contextlib
import json
import math
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from jitterlab import plugins
from jitterlab.analysis.synthetic import square_wave
from jitterlab.campaign.file import load_campaign
from jitterlab.cli.main import main
from jitterlab.model.errors import UserError

MAX_MESSAGE = 2200  # the CLI cuts an error at 2000 characters; the rest is its frame
HUGE = "9" * 20_000
VALUES: dict[str, object] = {
    "int": 3, "negative": -1, "zero": 0, "big": 10**18, "float": 1.5, "inf": math.inf, "bool": True,
    "list": [1, "a"], "empty-list": [], "table": {"a": 1}, "empty-table": {}, "empty": "", "blank": " ",
    "escape": "\x1b[2J\x1b]0;x\x07", "huge": HUGE, "huge-duration": HUGE + "s", "newline": "a\nb",
    "shell": "$(touch PWNED); `touch PWNED`", "option": "--help", "bidi": "a\u202eb", "datetime": "DATE",
}
TARGET_KEYS = {
    "local": ("name", "kind", "workdir"),
    "ssh": ("name", "kind", "host", "port", "user", "key", "known_hosts", "accept_new_host_key",
            "connect_timeout", "workdir", "cc"),
    "labgrid": ("name", "kind", "place", "coordinator", "service", "keyfile", "username", "workdir",
                "known_hosts"),
}


def toml(value: object) -> str:
    if value == "DATE":
        return "1979-05-27T07:32:00Z"
    if isinstance(value, float) and math.isinf(value):
        return "inf"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {toml(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(toml(v) for v in value) + "]"
    return json.dumps(value) if isinstance(value, str) else str(value)


def campaign(campaign: dict | None = None, target: dict | None = None, matrix: dict | None = None,
             extra: str = "") -> str:
    sections = [("[campaign]", {"name": '"t"', "duration": '"1s"', **(campaign or {})})]
    if target:
        sections.append(("[[target]]", target))
    sections.append(("[matrix]", matrix or {"impl": '"c-fifo"', "period": '"10ms"', "probe": '"self"'}))
    text = "".join(head + "\n" + "".join(f"{k} = {v}\n" for k, v in body.items()) for head, body in sections)
    return text + extra


def key_cases() -> Iterator[tuple[str, object]]:
    """(name of the key, a function of a TOML value giving a campaign with the key set to it)."""
    for key in ("name", "description", "repetitions", "duration", "warmup", "load_warmup", "blind_threshold",
                "run_timeout", "on_missing_rt", "labels", "cpus"):
        yield f"campaign.{key}", lambda v, key=key: campaign({key: v})
    for role in ("program", "probe", "load"):
        yield f"campaign.cpus.{role}", lambda v, role=role: campaign(extra=f"[campaign.cpus]\n{role} = {v}\n")
    yield "campaign.labels.KEY", lambda v: campaign(extra=f"[campaign.labels]\nimage = {v}\n")
    for kind, keys in TARGET_KEYS.items():
        base = {"name": '"b"', "kind": json.dumps(kind), "host": '"b"', "place": '"p"'}
        base = {k: v for k, v in base.items() if k in keys}
        for key in keys:
            yield f"target.{kind}.{key}", lambda v, base=base, key=key: campaign(target={**base, key: v})
    for entry in plugins.BENCHMARKS:
        required = {p.name: p.example for p in entry.obj.params if p.default is None}
        base = {"benchmark": json.dumps(entry.name), **required}
        for key in [*(p.name for p in entry.obj.params), "benchmark", "load"]:
            yield f"matrix.{entry.name}.{key}", lambda v, base=base, key=key: campaign(
                matrix={**base, key: v})
    for kind, registry in (("loads", plugins.LOADS), ("probes", plugins.PROBES), ("pins", plugins.PINS)):
        for entry in registry:
            for param in entry.obj.params:
                table = f"[{kind}.{entry.name}]\n{param.name} = "
                yield f"{kind}.{entry.name}.{param.name}", lambda v, t=table: campaign(extra=f"{t}{v}\n")
    for key in ("impl", "period", "load", "target", "benchmark"):
        two = {"impl": '["c-fifo", "python"]', "period": '"10ms"', "probe": '"self"'}
        yield f"exclude.{key}", lambda v, key=key, two=two: campaign(
            matrix=two, extra=f"[[exclude]]\n{key} = {v}\n")


class Hang(Exception):
    pass


@contextlib.contextmanager
def no_hang(seconds: int = 30):
    """Not a timing assertion: a guard that turns a hang (the bug class of issue 14) into a failure."""
    def stop(*_):
        raise Hang(f"still running after {seconds}s")

    previous = signal.signal(signal.SIGALRM, stop)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def one_line(message: str) -> None:
    assert "\n" not in message.strip() and len(message) < MAX_MESSAGE, message[:300]
    assert HUGE not in message and "\x1b" not in message  # echoes are cut, controls escaped


CASES = list(key_cases())


@pytest.mark.parametrize(("key", "make"), CASES, ids=[k for k, _ in CASES])
def test_every_campaign_key_with_every_hostile_value(tmp_path, monkeypatch, key, make):
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.toml"
    for name, value in VALUES.items():
        path.write_text(make(toml(value)))
        with no_hang():
            try:
                load_campaign(path)  # accepted: a documented acceptance (README, "Limits")
            except UserError as exc:
                one_line(str(exc))
                assert str(exc).startswith(f"{path}: "), (name, str(exc)[:200])
    assert not list(tmp_path.glob("PWNED"))


def test_the_sweep_reaches_every_key_of_every_plugin():
    keys = {k for k, _ in CASES}
    for entry in plugins.BENCHMARKS:
        assert {f"matrix.{entry.name}.{p.name}" for p in entry.obj.params} <= keys
    assert {f"loads.{e.name}.{p.name}" for e in plugins.LOADS for p in e.obj.params} <= keys
    assert len(keys) == len(CASES) > 100


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> tuple[Path, Path]:
    """A results directory with one imported run, and the capture it came from."""
    root = tmp_path_factory.mktemp("hostile")
    t, level = square_wave(1_000_000, 200, jitter_ns=1000, seed=1)
    capture = root / "cap.csv"
    capture.write_text("".join(f"{a},{b}\n" for a, b in zip(t, level, strict=True)))
    assert main(["import", "edges", str(capture), "--period", "1ms", "--results", str(root / "r"),
                 "--label", "image=a"]) == 0
    return root / "r", capture


CLI_VALUES = ["", " ", "-1", "0", "99999999999999999999", "x" * 5000, "\x1b[2J", "\udcff", "/", "nan", "=",
              "no/such/dir/x"]


def option_cases(results: str, capture: str, campaign_file: str) -> Iterator[tuple[list[str], str]]:
    r = ["--results", results]
    bases = {
        "run": (["run", campaign_file, "--dry-run"], ["CAMPAIGN", "--results", "--label"]),
        "show": (["show", *r], ["RUN_ID", "--results", "--campaign"]),
        "report": (["report", *r, "-o", "out.html", "--no-figure-files"],
                   ["--campaign", "-o", "--max-run-figures", "--results"]),
        "compare": (["compare", *r, "--baseline", "image=a", "--candidate", "image=b"],
                    ["--baseline", "--candidate", "--metric", "--format", "--seed", "--campaign",
                     "--results"]),
        "export": (["export", *r, "--format", "csv", "-o", "x.csv"],
                   ["--format", "-o", "--campaign", "--results"]),
        "import": (["import", "edges", capture, "--period", "1ms", *r],
                   ["FILE", "--period", "--label", "--format", "--signal", "--time-unit", "--warmup",
                    "--campaign", "--results"]),
        "doctor": (["doctor", "nowhere"], ["--campaign", "--key", "--known-hosts", "--connect-timeout"]),
    }
    positional = {"CAMPAIGN": 1, "FILE": 2}
    for command, (base, options) in bases.items():
        for option in options:
            for value in CLI_VALUES:
                argv = list(base)
                if option in positional:
                    argv[positional[option]] = value
                elif option == "RUN_ID":
                    argv.append(value)
                elif option in argv:
                    argv[argv.index(option) + 1] = value
                else:
                    argv += [option, value]
                yield argv, f"{command} {option}={value[:12]!r}"


def test_every_option_with_every_hostile_value(store, tmp_path, monkeypatch, capsys):
    results, capture = store
    monkeypatch.chdir(tmp_path)  # where an accepted -o writes
    campaign_file = tmp_path / "c.toml"
    campaign_file.write_text(campaign())
    for argv, name in option_cases(str(results), str(capture), str(campaign_file)):
        with no_hang(60):
            rc = main(argv)
        err = capsys.readouterr().err
        assert rc in (0, 1, 2), name
        if rc == 2:
            one_line(err)
            assert err.startswith(("error: ", "interrupted")), (name, err[:200])
    assert not list(tmp_path.rglob("PWNED"))


COMMAND_METRIC = '[[matrix.metric]]\nname = "n"\njson_path = "$.n"\ndirection = "none"\n'
COMMAND_CASES = {  # the command benchmark's keys with what would copy, hang or abort at run time
    "files-device": ('files = ["/dev/zero"]', "matrix.files: /dev/zero is a character device"),
    "files-root": ('files = ["/"]', "matrix.files: '/' is the root directory"),
    "files-parent": ('files = [".."]', "matrix.files: '..' does not end in a file or directory name"),
    "files-here": ('files = ["."]', "matrix.files: '.' does not end in a file or directory name"),
    "files-empty": ('files = [""]', "matrix.files: an empty path"),
    "files-kernel": ('files = ["/proc/self/status"]', "matrix.files: /proc/self/status is under /proc"),
    "build-empty": ('build = [""]', "matrix.build: the first word (the program to run) is empty"),
    "argv-long": (f'argv = ["echo", "{"a" * (128 << 10)}"]', "matrix.argv: the command is 131077 bytes"),
    "metric-file-dot": (COMMAND_METRIC + 'file = "."', "matrix.metric[0].file: a file the program writes"),
}


@pytest.mark.parametrize("case", COMMAND_CASES)
def test_command_keys_that_would_break_a_run_are_refused_when_read(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    line, says = COMMAND_CASES[case]
    argv = "" if line.startswith("argv") else 'argv = ["true"]\n'
    metric = "" if line.startswith("[[") else COMMAND_METRIC
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "t"\n[matrix]\nbenchmark = "command"\nname = "c"\n{argv}{line}\n'
                    + metric)
    with no_hang(), pytest.raises(UserError) as info:
        load_campaign(path)
    one_line(str(info.value))
    assert str(info.value).startswith(f"{path}: {says}"), str(info.value)[:300]
    assert not (tmp_path / "target").exists()


def test_a_command_printing_json_nested_too_deeply_fails_only_its_run(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "t"\nduration = "100ms"\nrepetitions = 1\n'
                    '[[target]]\nname = "local"\nkind = "local"\n'
                    f'workdir = "{tmp_path / "target"}"\n[matrix]\nbenchmark = "command"\nname = "c"\n'
                    f'argv = ["python3", "-c", "print(\'[\' * 200000)"]\n{COMMAND_METRIC}')
    with no_hang(60):
        rc = main(["run", str(path), "--results", str(tmp_path / "r")])
    assert rc == 1, capsys.readouterr().err
    from jitterlab.store.catalog import Store

    [run] = Store(tmp_path / "r", create=False).runs()
    assert run.status == "failed" and "JSON nested too deeply to read" in (run.error or "")
