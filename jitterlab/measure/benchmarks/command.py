"""command: the user's own program as a benchmark, its metrics read from its output.

The program runs in the run's scratch directory on the target, with the files the campaign ships
there and after an optional build step, under the campaign's matrix, loads and repetitions.
Placeholders such as {duration_s} are substituted inside each argv word; a word stays one word
whatever the value (no shell ever sees the command). Each [[matrix.metric]] table reads one
number: the first group of the LAST match of `regex` in the output (stdout and stderr together),
or the number at `json_path` of the output as JSON (the whole output, else its last JSON line),
or of a file the program wrote (`file`). A metric that cannot be read fails the run with the
output attached; the program's process group is stopped when the run ends.

Everything a careless or hostile campaign could make unbounded is bounded: what `files` may ship
(measure/command/files.py), the length of a command line (MAX_COMMAND_BYTES, checked when the
campaign is read) and what is kept of the output (measure/command/output.py).
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.command.files import check_files, ship_files
from jitterlab.measure.command.output import (
    json_path_steps,
    read_metric,
    read_output,
    run_program,
)
from jitterlab.measure.tools.run import failed
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.params import Param, ParamValue, show_words, text, word_list, words
from jitterlab.model.records import Metric
from jitterlab.targets.processes import pinned

__all__ = ["Command", "json_path_steps", "placeholder_values", "read_metric", "substitute"]

# Constant: the working directory and the argv reach it as positional parameters.
IN_DIR = 'cd -- "$0" && exec "$@"'
LOG = "command.log"
BUILD_LOG = "build.log"
PLACEHOLDERS = {
    "duration_s": "campaign.duration in seconds (decimal: 0.5, 10)",
    "duration_ms": "campaign.duration in milliseconds (decimal)",
    "duration_ns": "campaign.duration in nanoseconds",
    "duration_whole_s": "campaign.duration in whole seconds, rounded up (at least 1)",
    "scratch": "the run's working directory on the target (where the files are)",
    "cpus": 'the program CPUs of the placement, like taskset -c ("" when unplaced)',
    "repetition": "the repetition, from 0",
    "variant": "the cell's variant value",
    "name": "the matrix table's name",
    "target": "the target's name",
}
_TOKEN = re.compile(r"\{\{|\}\}|\{([A-Za-z_][A-Za-z0-9_]*)\}|[{}]")
_NAME = re.compile(r"^[a-z][a-z0-9_]*$")
# a command line as one shell line: over ssh the whole command (with the launcher around it) travels
# as ONE word to the target's shell, and Linux takes no word over 128 KiB (MAX_ARG_STRLEN)
MAX_COMMAND_BYTES = 64 << 10
# what {scratch} and {cpus} may take when the campaign is read (the target's paths are not known then)
_ROOM = {"scratch": 4096, "cpus": 1024, "repetition": 10}
_ROUNDING_S = 1.0  # as for the wrapped tools: a program that counts whole seconds may take one more
_METRIC_KEYS = {"name", "regex", "json_path", "file", "unit", "direction"}
_DIRECTIONS = ("lower", "higher", "none")


# --- placeholders ----------------------------------------------------------------------------


def placeholders_in(word: str, where: str) -> list[str]:
    """The placeholder names in a word; UserError for an unknown one or a lone brace."""
    names = []
    for match in _TOKEN.finditer(word):
        token = match.group(0)
        if token in ("{{", "}}"):
            continue
        name = match.group(1)
        if name is None:
            raise UserError(f"{where}: lone {token!r} in {word!r}; write {{{{ or }}}} for a literal brace")
        if name not in PLACEHOLDERS:
            raise UserError(f"{where}: unknown placeholder {{{name}}} in {word!r}; known: "
                            + ", ".join(f"{{{k}}}" for k in PLACEHOLDERS))
        names.append(name)
    return names


def substitute(word: str, values: dict[str, str]) -> str:
    """`word` with each {name} replaced by values[name] (and {{ }} by single braces)."""

    def one(match: re.Match) -> str:
        token = match.group(0)
        return token[0] if token in ("{{", "}}") else values[match.group(1)]

    return _TOKEN.sub(one, word)


def _decimal(ns: int, per: int) -> str:
    whole, rest = divmod(ns, per)
    digits = len(str(per)) - 1
    return f"{whole}.{rest:0{digits}d}".rstrip("0").rstrip(".") if rest else str(whole)


def placeholder_values(ctx: RunContext) -> dict[str, str]:
    return _values(ctx.settings.duration_ns, ctx.cell, ctx.scratch,
                   ",".join(map(str, ctx.placement.program_cpus or ())), str(ctx.repetition))


def _values(ns: int, cell, scratch: str, cpus: str, repetition: str) -> dict[str, str]:
    return {
        "duration_s": _decimal(ns, 1_000_000_000),
        "duration_ms": _decimal(ns, 1_000_000),
        "duration_ns": str(ns),
        "duration_whole_s": str(max(1, -(-ns // 1_000_000_000))),
        "scratch": scratch,
        "cpus": cpus,
        "repetition": repetition,
        "variant": str(cell.param("variant", "")),
        "name": str(cell.param("name", "")),
        "target": cell.target,
    }


# --- keys ------------------------------------------------------------------------------------


def _argv(lo: int):
    read = words(lo)

    def parse(value: object, where: str) -> ParamValue:
        canonical = read(value, where)
        argv = word_list(canonical)
        for word in argv:
            placeholders_in(word, where)
        if lo and not argv[0]:
            raise UserError(f"{where}: the first word (the program) is empty")
        if argv and not argv[0]:
            raise UserError(f'{where}: the first word (the program to run) is empty; name it, e.g. '
                            '["make", "fps"], or leave the key out for none')
        check_length(argv, where)
        return canonical

    return parse


def check_length(argv: list[str], where: str, raised: type[Exception] = UserError) -> None:
    """`raised` when the command, quoted as one shell line, is longer than MAX_COMMAND_BYTES."""
    size = len(shlex.join(argv).encode(errors="replace"))
    if size > MAX_COMMAND_BYTES:
        raise raised(f"{where}: the command is {size} bytes as one shell line, over the "
                     f"{MAX_COMMAND_BYTES >> 10} KiB a command line carries to every target (placeholders "
                     "filled in); put long input in a file of `files` and pass its name")


def _files(value: object, where: str) -> ParamValue:
    """Local files or directories (relative to the directory jitterlab runs in), distinct names;
    see measure/command/files.py for what may be shipped."""
    canonical = words()(value, where)
    check_files(word_list(canonical), (LOG, BUILD_LOG), where)
    return canonical


def _metric_table(entry: object, where: str) -> dict[str, str]:
    if not isinstance(entry, dict):
        raise UserError(f'{where}: expected a [[matrix.metric]] table with name, regex or json_path, '
                        'unit and direction')
    for key in entry:
        if key not in _METRIC_KEYS:
            raise UserError(f"{where}.{key}: unknown key; known: {', '.join(sorted(_METRIC_KEYS))}")
        if not isinstance(entry[key], str):
            raise UserError(f"{where}.{key}: expected a string, got {entry[key]!r}")
    name = entry.get("name", "")
    if not _NAME.match(name) or name.startswith("load_"):
        raise UserError(f'{where}.name: a metric name is lower case letters, digits and _, not starting '
                        f'with load_ (put the unit in it: "fps", "latency_p99_ns"); got {name!r}')
    if ("regex" in entry) == ("json_path" in entry):
        raise UserError(f"{where}: give exactly one of regex (its first group is the number) or json_path")
    if "regex" in entry:
        try:
            groups = re.compile(entry["regex"]).groups
        except re.error as exc:
            raise UserError(f"{where}.regex: not a regular expression: {exc}") from None
        if groups < 1:
            raise UserError(f"{where}.regex: put the number in a group, e.g. 'fps=([0-9.]+)'")
    else:
        json_path_steps(entry["json_path"], f"{where}.json_path")
    direction = entry.get("direction")
    if direction not in _DIRECTIONS:
        raise UserError(f'{where}.direction: say which way is better: "higher", "lower" or "none" '
                        f"(describes, does not grade); got {direction!r}")
    file = entry.get("file")
    if file is not None and (file.startswith("/") or ".." in Path(file).parts
                             or Path(file).name in ("", ".")):
        raise UserError(f"{where}.file: a file the program writes in its working directory, e.g. "
                        f'"result.json" (leave file out to read the output); got {file!r}')
    return {"unit": "", "file": "", **entry}


def _metrics(value: object, where: str) -> ParamValue:
    if not isinstance(value, list) or not value:
        raise UserError(f'{where}: give one or more [[matrix.metric]] tables, e.g. name = "fps", '
                        "regex = 'fps=([0-9.]+)', unit = \"1/s\", direction = \"higher\"")
    tables = [_metric_table(entry, f"{where}[{i}]") for i, entry in enumerate(value)]
    names = [t["name"] for t in tables]
    if len(set(names)) != len(names):
        raise UserError(f"{where}: two metrics are named the same; names must differ")
    return json.dumps(tables, sort_keys=True)


def _variant(value: object, where: str) -> ParamValue:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise UserError(f"{where}: expected a string or a number, got {value!r}")
    return value


def _package(value: object, where: str) -> ParamValue:
    if value == "":
        return ""
    if not isinstance(value, str) or not re.fullmatch(r"[a-z0-9][a-z0-9+.-]+", value):
        raise UserError(f'{where}: expected a Debian package name like "python3", got {value!r}')
    return value


def _show_text(value: ParamValue) -> str:
    return '""' if value == "" else str(value)


def metric_specs(cell) -> list[dict[str, str]]:
    return json.loads(str(cell.param("metric")))


# --- the benchmark ---------------------------------------------------------------------------


class Command(BenchmarkBase):
    params = (
        Param("name", "what the program measures, naming the cell in reports", text, '"stack-fps"'),
        Param("argv", "the program and its arguments; placeholders like {duration_s} are substituted "
              "per word", _argv(1), '["python3", "fps.py", "--seconds", "{duration_s}"]', show=show_words,
              whole=True),
        Param("metric", "[[matrix.metric]] tables: name, regex or json_path (and file), unit, direction",
              _metrics, '[{name = "fps", regex = "fps=([0-9.]+)", unit = "1/s", direction = "higher"}]',
              show=lambda v: ",".join(t["name"] for t in json.loads(str(v))), whole=True),
        Param("files", "local regular files or directories (10,000 entries and 1 GiB in all) copied into "
              "the working directory before each run",
              _files, '["examples/fps.py"]', default=(), show=show_words, whole=True),
        Param("build", "a command run in the working directory before each run (not timed)", _argv(0),
              '["make", "fps"]', default=(), show=show_words, whole=True),
        Param("variant", "a value of your own for {variant}; a list makes it an axis", _variant,
              '["small", "large"]', default="", show=_show_text),
        Param("package", "the Debian package with the program, for the missing-tool message", _package,
              '"python3"', default="", show=_show_text),
    )

    def metric_names(self, cell) -> frozenset[str]:
        return frozenset(spec["name"] for spec in metric_specs(cell))

    def tools(self, cell) -> dict[str, str]:
        tools = {}
        shipped = {Path(f).name for f in word_list(cell.param("files"))}
        for key in ("build", "argv"):
            argv = word_list(cell.param(key))
            if argv and "/" not in argv[0] and "{" not in argv[0] and argv[0] not in shipped:
                tools[argv[0]] = str(cell.param("package") or argv[0]) if key == "argv" else argv[0]
        return tools

    def needer(self, cell) -> str:
        return f"command {cell.param('name')}"

    def estimate_s(self, settings, cell) -> float:
        return super().estimate_s(settings, cell) + (5.0 if word_list(cell.param("build")) else 0.0)

    def label(self, cell) -> str:
        variant = cell.param("variant")
        return " ".join(str(p) for p in ("command", cell.param("name"), variant, cell.load) if p != "")

    def check(self, cell, settings, where) -> None:
        # with the cell's own values, and room for those only the target knows (its paths)
        room = ("x" * _ROOM[k] for k in ("scratch", "cpus", "repetition"))
        values = _values(settings.duration_ns, cell, *room)
        for key in ("build", "argv"):
            check_length([substitute(w, values) for w in word_list(cell.param(key))], f"{where}.{key}")

    def execute(self, ctx: RunContext) -> Measurement:
        cell = ctx.cell
        values = placeholder_values(ctx)
        ship_files(ctx, word_list(cell.param("files")))
        build = [substitute(w, values) for w in word_list(cell.param("build"))]
        if build:
            check_length(build, "build", RunFailed)
            self._build(ctx, build)
        argv = [substitute(w, values) for w in word_list(cell.param("argv"))]
        check_length(argv, "argv", RunFailed)
        command = [*pinned(ctx.placement.program_cpus), "sh", "-c", IN_DIR, ctx.scratch, *argv]
        name = f"command {cell.param('name')}"
        timeout_s = (ctx.settings.duration_ns + ctx.settings.run_timeout_ns) / 1e9 + _ROUNDING_S
        rc, output = run_program(ctx, command, name, LOG, timeout_s=timeout_s,
                                 budget="duration + campaign.run_timeout")
        if rc != 0:
            exc = failed(name, rc, output.kept(), LOG)
            raise RunFailed(exc.reason + output.note(LOG), attachments=exc.attachments)
        metrics, files = [], {}
        for spec in metric_specs(cell):
            source, read = "the program's output", output
            if spec["file"]:
                read = files.setdefault(spec["file"], read_output(ctx, spec["file"]))
                source = f"{spec['file']} (written by the program)"
            try:
                value = read_metric(spec, read.text(), read.source(source))
            except RunFailed as exc:
                attachments = {LOG: output.kept(), **{f"out-{k}": v.kept() for k, v in files.items()}}
                notes = output.note(LOG) + "".join(v.note(f"out-{k}") for k, v in files.items())
                raise RunFailed(exc.reason + notes, attachments=attachments) from None
            metrics.append(Metric(spec["name"], value, spec["unit"], "", spec["direction"]))
        warnings = [output.warning("its output")] if output.left_out else []
        return Measurement(metrics=metrics, warnings=warnings)

    def _build(self, ctx: RunContext, build: list[str]) -> None:
        rc, output = run_program(ctx, ["sh", "-c", IN_DIR, ctx.scratch, *build], "the build step", BUILD_LOG,
                                 timeout_s=ctx.settings.run_timeout_ns / 1e9, budget="campaign.run_timeout")
        if rc != 0:
            exc = failed("the build step", rc, output.kept(), BUILD_LOG)
            raise RunFailed(exc.reason + output.note(BUILD_LOG), attachments=exc.attachments)


BENCHMARKS.add(
    "command",
    "your own program as a benchmark: argv with placeholders, files to ship, a build step; metrics "
    "read from its output by regex or JSON path",
    Command(),
)
