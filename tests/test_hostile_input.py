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
    "local": ("name", "kind", "workdir", "unit"),
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
    for kind, unit in (("serial", '"/dev/ttyACM0"'), ("remoteproc", '"/dev/ttyRPMSG0"')):
        profile = '"lm3s6965evb"' if kind == "serial" else '"stm32mp1-m4"'
        table = {"kind": json.dumps(kind), "profile": profile, "tty": unit}
        for key in ("kind", "profile", "tty", "baud", "flash", "core", "replace"):
            yield f"target.unit.{kind}.{key}", lambda v, table=table, key=key: campaign(target={
                "name": '"b"', "kind": '"local"',
                "unit": "{" + ", ".join(f"{k} = {x}" for k, x in {**table, key: v}.items()) + "}"})
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
        "run": (["run", campaign_file, "--dry-run"], ["CAMPAIGN", "--results", "--label", "--until-decided",
                                                       "--watch", "--max-runs", "--max-time"]),
        "show": (["show", *r], ["RUN_ID", "--results", "--campaign", "--label", "--since"]),
        # no per-run figures: an accepted value renders the whole report, and those figures (seconds
        # each) read nothing of the options; --max-run-figures gets each hostile value all the same
        "report": (["report", *r, "-o", "out.html", "--no-figure-files", "--max-run-figures", "0"],
                   ["--campaign", "-o", "--max-run-figures", "--results", "--trend", "--by"]),
        "compare": (["compare", *r, "--baseline", "image=a", "--candidate", "image=b"],
                    ["--baseline", "--candidate", "--metric", "--format", "--seed", "--campaign",
                     "--results", "--threshold", "--fail-on"]),
        "export": (["export", *r, "--format", "csv", "-o", "x.csv"],
                   ["--format", "-o", "--campaign", "--results", "--trend", "--by"]),
        "push": (["push", *r, "--to", "pushed"], ["--results"]),
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


WATCH_REFUSED = ("no benchmark of this campaign produces such a metric; its benchmark squarewave can produce "
                 "max_rel_period_error, p99_rel_period_error, std_period_ns, blind_time_ns, drift_ppm, "
                 "excluded_periods, max_delay, max_duty_error, max_early, max_half_period_error, "
                 "max_is_lower_bound, max_period_ns, max_rel_period_error_bound, "
                 "max_rel_period_error_excluded_lower_bound, max_rel_period_error_upper_bound, "
                 "mean_period_ns, min_period_ns, missed_edges, n_edges, n_periods, ... (13 more); watch one "
                 "of these, or leave out --watch to watch each benchmark's headline metrics")


def test_every_hostile_watch_is_refused_in_one_line_before_a_target_opens(tmp_path, monkeypatch, capsys):
    """--watch with --until-decided: what is no metric's name is refused as the option is read, a
    name the campaign's benchmarks cannot produce (Benchmark.metric_names) before anything is opened,
    with the names they can (their headlines first, the rest cut short)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "c.toml"
    path.write_text(campaign(matrix={"impl": '["c-fifo", "python"]', "period": '"10ms"', "probe": '"self"'}))
    for value in CLI_VALUES:
        for dry_run in ([], ["--dry-run"]):
            with no_hang():
                rc = main(["run", str(path), *dry_run, "--until-decided", "impl=c-fifo..impl=python",
                           "--watch", value])
            err = capsys.readouterr().err
            assert rc == 2, value
            one_line(err)
            assert err.startswith("error: "), (value, err[:200])
    assert list(tmp_path.iterdir()) == [path]  # no results directory, no target's workdir
    assert main(["run", str(path), "--until-decided", "impl=c-fifo..impl=python", "--watch", "nan"]) == 2
    assert capsys.readouterr().err == f"error: --watch nan: {WATCH_REFUSED}\n"


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


# --- store URLs, push, image campaigns, trend and import options, qemu and scpi keys -----------------

URL_CASES = {  # --results / --to: what looks like a URL jitterlab does not speak is never a directory
    "scheme-case": ("PostgreSQL://u@h/db?raw_dir=/x", " 'PostgreSQL://u@h/db?raw_dir=/x': jitterlab cannot "
                    "keep "
                                                      "results in a PostgreSQL: URL; give postgresql://"),
    "one-slash": ("postgresql:/u@h/db?raw_dir=/x", " 'postgresql:/u@h/db?raw_dir=/x': jitterlab cannot keep"),
    "driver-name": ("postgresql+psycopg://u@h/db", " 'postgresql+psycopg://u@h/db': jitterlab cannot keep"),
    "http": ("http://x/y", " 'http://x/y': jitterlab cannot keep results in a http: URL"),
    "empty": ("", ": give a path"),
    "ipv6-unclosed": ("postgresql://u@[::1/db?raw_dir=/x", " 'postgresql://u@[::1/db?raw_dir=/x': not a URL "
                                                          "(Invalid IPv6 URL); write it postgresql://"),
    "query-password": ("postgresql://u@h/db?password=secret", " postgresql://u@h/db?password=***: say where"),
    "both-passwords": ("postgresql://u:secret@[::1/db?password=secret&raw_dir=/x",
                       " 'postgresql://u:***@[::1/db?password=***&raw_dir=/x': not a URL"),
}


@pytest.mark.parametrize("case", URL_CASES)
@pytest.mark.parametrize("option", ["--results", "--to"])
def test_a_store_url_jitterlab_does_not_speak_is_one_line_and_never_a_directory(store, tmp_path, monkeypatch,
                                                                               capsys, case, option):
    monkeypatch.delenv("JITTERLAB_RAW_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    text, says = URL_CASES[case]
    results = str(store[0])
    commands = [["push", "--results", results, "--to", text]] if option == "--to" else [
        ["show", "--results", text], ["report", "--results", text],
        ["export", "--results", text, "--format", "csv"],
        ["push", "--results", text, "--to", "out"]]
    for argv in commands:
        with no_hang():
            assert main(argv) == 2, argv
        err = capsys.readouterr().err
        one_line(err)
        assert err.startswith(f"error: {option}{says}") and "secret" not in err, (argv, err)
    assert list(tmp_path.iterdir()) == []


def test_push_pushes_what_is_sound_and_names_each_damaged_run(tmp_path, capsys):
    from jitterlab.store.catalog import Store

    t, level = square_wave(1_000_000, 50, seed=1)
    capture = tmp_path / "cap.csv"
    capture.write_text("".join(f"{a},{b}\n" for a, b in zip(t, level, strict=True)))
    for image in ("a", "b", "c"):
        assert main(["import", "edges", str(capture), "--period", "1ms", "--results", str(tmp_path / "r"),
                     "--label", f"image={image}"]) == 0
    source = Store(tmp_path / "r", create=False)
    missing, changed, sound = source.runs()
    source.close()
    (tmp_path / "r" / missing.raw_path).unlink()
    (tmp_path / "r" / changed.raw_path).write_bytes(b"PAR1")
    capsys.readouterr()
    with no_hang():
        assert main(["push", "--results", str(tmp_path / "r"), "--to", str(tmp_path / "lab")]) == 1
    out, err = capsys.readouterr()
    assert out.startswith("pushed 1 run ")
    assert [r.id for r in Store(tmp_path / "lab", create=False).runs()] == [sound.id]
    assert err.splitlines()[:2] == [
        f"run {missing.id} was not pushed: its raw file {missing.raw_path} is missing",
        f"run {changed.id} was not pushed: its raw file {changed.raw_path} was changed after the run (its "
        "sha256 differs)"]


IMAGE_TARGET = '[[target]]\nname = "b"\nkind = "labgrid"\nplace = "p"\n'
CAMPAIGN_CASES = {  # keys that were stored or spliced unchecked: refused when the campaign is read
    "images-empty-key": (IMAGE_TARGET + 'images = { "" = "IMG" }',
                         "target[0].images (a value of the label 'image'): a label has a value"),
    "images-escape-key": (IMAGE_TARGET + 'images = { "x\\u001b[2Jy" = "IMG" }',
                          "target[0].images (a value of the label 'image'): expected one line of printable"),
    "images-long-key": (IMAGE_TARGET + f'images = {{ "{"v" * 300}" = "IMG" }}',
                        "target[0].images (a value of the label 'image'): expected one line of printable"),
    "boot-prompt-empty": (IMAGE_TARGET + 'images = { "a" = "IMG" }\nboot_prompt = ""',
                          "target[0].boot_prompt: '' matches empty text, so the boot would not be waited"),
    "boot-prompt-int": (IMAGE_TARGET + 'images = { "a" = "IMG" }\nboot_prompt = 5',
                        "target[0].boot_prompt: expected a regular expression"),
    "qemu-cmdline-quoted": ('[[target]]\nname = "vm"\nkind = "qemu"\ncmdline = \'"rdinit=/bin/sh"\'',
                            "target[0].cmdline: rdinit= is set by jitterlab to boot the guest"),
    # every duration of a campaign file is at most a week (README, "Limits"), a target's too
    "qemu-boot-timeout-200h": ('[[target]]\nname = "vm"\nkind = "qemu"\nboot_timeout = "200h"',
                               "target[0].boot_timeout: duration '200h' is too long; give at most 168 h"),
    "ssh-alive-timeout-200h": ('[[target]]\nname = "b"\nkind = "ssh"\nhost = "b"\nalive_timeout = "200h"',
                               "target[0].alive_timeout: duration '200h' is too long; give at most 168 h"),
    "ssh-connect-timeout-200h": ('[[target]]\nname = "b"\nkind = "ssh"\nhost = "b"\nconnect_timeout = "200h"',
                                 "target[0].connect_timeout: duration '200h' is too long; give at most"),
    "images-boot-timeout-200h": (IMAGE_TARGET + 'images = { "a" = "IMG" }\nboot_timeout = "200h"',
                                 "target[0].boot_timeout: duration '200h' is too long; give at most 168 h"),
    "scpi-channel-commands": ('[probes.scpi]\nresource = "TCPIP::h::INSTR"\nprofile = "rs-rto"\n'
                              'channel = "1;*RST;"',
                              "probes.scpi.channel: expected the instrument's channel, a number or a word"),
}


@pytest.mark.parametrize("case", CAMPAIGN_CASES)
def test_keys_that_were_taken_unchecked_are_refused_when_read(tmp_path, monkeypatch, case):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "IMG").write_bytes(b"image")
    body, says = CAMPAIGN_CASES[case]
    target, _, extra = body.partition("[probes") if body.startswith("[probes") else (body, "", "")
    path = tmp_path / "c.toml"
    path.write_text(campaign(extra=f"[probes{extra}\n" if extra else "") if not target else
                    '[campaign]\nname = "t"\nduration = "1s"\n' + target + '\n[matrix]\nimpl = "c-fifo"\n'
                    'period = "10ms"\nprobe = "self"\n')
    with no_hang(), pytest.raises(UserError) as info:
        load_campaign(path)
    one_line(str(info.value))
    assert str(info.value).startswith(f"{path}: {says}"), str(info.value)[:300]


@pytest.mark.parametrize("dry_run", [[], ["--dry-run"]], ids=["run", "dry-run"])
@pytest.mark.parametrize("how", ["file", "option"])
def test_the_image_label_set_also_by_the_campaign_is_refused_before_anything_runs(tmp_path, monkeypatch,
                                                                                  capsys, how, dry_run):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "IMG").write_bytes(b"image")
    labels = '[campaign.labels]\nimage = "x"\n' if how == "file" else ""
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "t"\nduration = "1s"\n{labels}{IMAGE_TARGET}'
                    'images = { "a" = "IMG" }\n'
                    '[matrix]\nimpl = "c-fifo"\nperiod = "10ms"\nprobe = "self"\n')
    argv = ["run", str(path), "--results", str(tmp_path / "r"), *dry_run]
    argv += ["--label", "image=x"] if how == "option" else []
    with no_hang():
        assert main(argv) == 2
    err = capsys.readouterr().err
    one_line(err)
    assert err.startswith(f"error: {path}: target[0].image_label: the label 'image' is set per image"), err
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize(("option", "says"), [
    (["--resume"], "--resume: an image campaign measures every image afresh"),
    (["--until-decided", "image=a..image=b"],
     "--until-decided image=a..image=b: no image has image=b (the campaign's images: image=a)"),
])
def test_what_an_image_campaign_refuses_dry_run_refuses_too(tmp_path, monkeypatch, capsys, option, says):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "IMG").write_bytes(b"image")
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "t"\nduration = "1s"\n{IMAGE_TARGET}images = {{ "a" = "IMG" }}\n'
                    '[matrix]\nimpl = "c-fifo"\nperiod = "10ms"\nprobe = "self"\n')
    with no_hang():
        assert main(["run", str(path), "--results", str(tmp_path / "r"), "--dry-run", *option]) == 2
    err = capsys.readouterr().err
    one_line(err)
    assert err.startswith(f"error: {says}"), err


def test_options_that_were_ignored_without_a_word_are_refused(store, tmp_path, monkeypatch, capsys):
    results, capture = store
    monkeypatch.chdir(tmp_path)
    r = ["--results", str(results)]
    cases = {
        "report --trend ''": (["report", *r, "--trend", ""],
                              "error: jitterlab report: argument --trend: give a "
                                                             "metric's name"),
        "report --by": (["report", *r, "--by", "image"], "error: --by 'image': only with --trend METRIC"),
        "export --by": (["export", *r, "--format", "csv", "--by", "date"],
                        "error: --by 'date': only with --trend"),
        "import --campaign ''": (["import", "edges", str(capture), "--period", "1ms", *r, "--campaign", ""],
                                 "error: jitterlab import edges: argument --campaign: a campaign has a"),
        "import --campaign ' '": (["import", "edges", str(capture), "--period", "1ms", *r, "--campaign", " "],
                                  "error: jitterlab import edges: argument --campaign: a campaign has a"),
        # an empty name selected no campaign, and summary's error did not name --campaign
        **{f"{argv[0]} --campaign {blank!r}": ([*argv, *r, "--campaign", blank],
                                               f"error: jitterlab {argv[0]}: argument --campaign: a campaign "
                                               "has a name; give one that is in the store, or leave out "
                                               "--campaign")
           for argv in (["summary"], ["show"], ["report", "-o", "x.html"], ["export", "--format", "csv"],
                        ["compare", "--baseline", "image=a", "--candidate", "image=b"])
           for blank in ("", " ")},
        # float() reads 1_0 as 10 and "١٠" (Arabic-Indic digits) as 10
        **{f"compare --threshold {value!r}": (
            ["compare", *r, "--baseline", "image=a", "--candidate", "image=b", "--threshold", value],
            f"error: --threshold {value!r}: give a change in percent above 0 and below 100 in digits")
           for value in ("1_0", "timing=1_0", "\u0661\u0660", "1e1")},
    }
    for name, (argv, says) in cases.items():
        with no_hang():
            assert main(argv) == 2, name
        err = capsys.readouterr().err
        one_line(err)
        assert err.startswith(says), (name, err)
    assert list(tmp_path.iterdir()) == []
