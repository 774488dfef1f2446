"""`jitterlab doctor TARGET`: is this machine ready to be measured, and what should be fixed?

Opens TARGET like a campaign would (a campaign's target, `local`, or an ssh:// URL), runs the
checks of system/doctor.py with the tools every benchmark and load may need, adds the probes usable
there, and prints one line per topic with its fix. Exit status 0: all is well; 1: something needs
fixing; 2: bad input or unreachable.
"""

from __future__ import annotations

import argparse
import itertools
import tomllib
from collections.abc import Mapping
from pathlib import Path

from rich.markup import escape
from rich.text import Text

from jitterlab.cli.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from jitterlab.cli.options import add_results
from jitterlab.cli.paths import path_arg
from jitterlab.model.errors import TargetLost, UserError
from jitterlab.model.facts import SystemFacts
from jitterlab.model.params import ParamValue
from jitterlab.model.records import Cell
from jitterlab.model.registry import did_you_mean
from jitterlab.report.console import SafeConsole
from jitterlab.report.layout import Prose
from jitterlab.report.limits import measure_tuning, measured_line
from jitterlab.report.terminal import console
from jitterlab.report.warning_list import paste_safe_lines
from jitterlab.store import shown_spec
from jitterlab.system.doctor import Finding, describe, examine
from jitterlab.targets.base import Target
from jitterlab.targets.capabilities import has


def add_parser(sub) -> argparse.ArgumentParser:
    doctor = sub.add_parser(
        "doctor",
        help="check that a target is ready to be measured, and say what to fix",
        description="Connect to TARGET and report tools present/missing (with the package to install), "
        "RT permission, CPU governor, isolcpus, clocksource, preemption model, RT throttling, idle states "
        "and cpu_dma_latency, nohz_full/rcu_nocbs, IRQ affinity, SMT, transparent hugepages, the SMI "
        "counter (x86), memory available and BogoMIPS, each with its fix, then the probes usable there "
        "(vpin with a second CPU, emulator and register-poll outside an emulated board, logic analyzers "
        "and VISA instruments found on this machine). "
        "TARGET: `local`, ssh://user@host:port, or a target name of --campaign FILE. "
        "Exit status 0: all is well; 1: something needs fixing; 2: bad input or unreachable.",
    )
    doctor.add_argument("target", nargs="?", metavar="TARGET",
                        help="local (this machine) | ssh://user@host:port | a target name of --campaign FILE")
    doctor.add_argument("--campaign", type=path_arg, metavar="FILE",
                        help="take TARGET from this campaign file (and print, under a fix a tuning "
                        "applies, the command that measures it on this campaign)")
    add_results(doctor)  # the store the measuring commands it prints name
    doctor.add_argument("--key", metavar="FILE", help="with ssh://: identity file")
    doctor.add_argument("--known-hosts", metavar="FILE", help="with ssh://: known_hosts file")
    doctor.add_argument(
        "--accept-new-host-key", action="store_true", help="with ssh://: trust a host key seen the first time"
    )
    doctor.add_argument("--connect-timeout", metavar="DURATION", help='with ssh://: e.g. "10s"')
    return doctor


def run(args: argparse.Namespace) -> int:
    out = console(highlight=False)  # piped: lines whole; a terminal: folded between words, never in a command
    if args.target is None:
        raise UserError(f"jitterlab doctor: which target? {TARGET_FORMS} (see jitterlab doctor --help)")
    ssh_options: dict[str, object] = {}
    for key, value in (("key", args.key), ("known_hosts", args.known_hosts),
                       ("connect_timeout", args.connect_timeout)):  # fmt: skip
        if value is not None:
            ssh_options[key] = value
    if args.accept_new_host_key:
        ssh_options["accept_new_host_key"] = True
    if ssh_options and not args.target.startswith("ssh://"):
        raise UserError("--key, --known-hosts, --accept-new-host-key, --connect-timeout: only with ssh://")
    try:
        target = open_target(args.target, args.campaign, ssh_options)
    except TargetLost as exc:
        return _unreachable(exc.reason)
    try:
        info, findings = diagnose(target)
        refused = tuning_refusals(target, info, findings)
    except TargetLost as exc:
        return _unreachable(exc.reason)
    finally:
        target.close()
    measure = measure_tuning(str(args.campaign), shown_spec(args.results), {}) if args.campaign else ""
    out.print(f"[bold]{escape(args.target)}[/]: {escape(describe(info))}")
    width = max(len(f.topic) for f in findings)
    for f in findings:
        mark = ("ok  ", "green") if f.fix is None else ("fix ", "red")
        if f.informational:
            mark = ("info", "cyan")
        line = Text.assemble("  ", mark, f" {f.topic:<{width}}  ", str(f.state))
        out.print(Prose(line, hang=2 + 4 + 1 + width + 2))  # folded lines under the state
    fixes = [f for f in findings if f.fix is not None]
    if not fixes:
        out.print("[green]all is well[/]: nothing to fix")
        return EXIT_OK
    out.print(f"[bold]{len(fixes)} to fix[/]:")
    for f in fixes:
        line = f"  - {f.topic}: {f.fix}"
        if not out.is_terminal or len(line) <= out.width:  # piped: one line, whatever its length
            out.print(escape(line))
        else:
            out.print(f"  - {escape(f.topic)}:")  # a fix (often a command) on lines of its own, unbroken
            for part in paste_safe_lines(f.fix, out.width - len(FIX_INDENT)):
                out.print(FIX_INDENT + escape(part))
        if f.tuning:  # under it: the tuning that applies it, and how to measure it
            _print_fix(out, tuning_line(f.tuning, refused.get(f.tuning), measure))
    return EXIT_FAILED


def _print_fix(out, line: str) -> None:
    """A line under the fixes: whole when piped or when it fits, else folded, never inside a command."""
    if not out.is_terminal or len(FIX_INDENT) + len(line) <= out.width:
        out.print(FIX_INDENT + escape(line))
        return
    for part in paste_safe_lines(line, out.width - len(FIX_INDENT)):
        out.print(FIX_INDENT + escape(part))


def tuning_refusals(target: Target, info: SystemFacts, findings: list[Finding]) -> dict[str, str | None]:
    """tuning -> why its check refuses it on `target` (None: it can be applied), for each tuning a
    finding's fix names, asked for a program on the last CPU (a campaign's placement there)."""
    from jitterlab import plugins
    from jitterlab.model.tuning import Cpus

    cpus = Cpus(program=(max((info.n_cpus or 1) - 1, 0),))
    return {f.tuning: plugins.TUNINGS.get(f.tuning, "doctor").check(target, cpus)
            for f in findings if f.tuning and f.fix is not None}


def tuning_line(tuning: str, refused: str | None, measure: str) -> str:
    """What doctor says under a fix a tuning applies: the command measuring it on --campaign's file
    (report/limits.measure_tuning), why the tuning cannot be applied there, or how to get the command."""
    if refused is not None:
        return f"tuning {tuning} applies it, but not on this target: {refused}"
    if measure:
        return measured_line(tuning, measure)
    return (f"tuning {tuning} applies it for a campaign's cells: with --campaign FILE, doctor prints the "
            "command that measures it on that campaign")


FIX_INDENT = "      "


def _unreachable(reason: str) -> int:
    SafeConsole(stderr=True).print(f"[bold red]error:[/] {escape(reason)}", highlight=False, soft_wrap=True)
    return EXIT_USAGE  # documented: 2 for bad input or an unreachable target


def open_target(spec: str, campaign: Path | None, ssh_options: Mapping[str, object]) -> Target:
    """TARGET as `jitterlab doctor` takes it: a campaign's target name, `local`, or ssh://user@host:port."""
    from jitterlab import plugins

    if campaign is not None:
        from jitterlab.campaign.file import load_campaign

        loaded = load_campaign(campaign)
        specs = {s.name: s for s in loaded.targets}
        if spec not in specs:
            raise UserError(f"TARGET {spec!r}: not a target of {campaign}; {did_you_mean(spec, specs)}its "
                            f"targets: {', '.join(specs)}")
        found = specs[spec]
        factory = plugins.TARGETS.get(found.kind, f"{campaign}: target.kind")
        return factory(found.name, found.options, found.where)
    if spec == "local":
        return plugins.TARGETS.get("local", "TARGET")("local", {})
    if spec.startswith("ssh://"):
        from jitterlab.targets.ssh.options import from_url
        from jitterlab.targets.ssh.target import SSHTarget

        options = from_url(spec, "TARGET", ssh_options)
        return SSHTarget(options.host, options).connect()
    close = "did you mean `local`? " if did_you_mean(spec, ["local"]) else ""
    raise UserError(f"TARGET {spec!r}: {close}{TARGET_FORMS}")


TARGET_FORMS = ("give `local` (this machine: jitterlab doctor local), ssh://user@host:port, or a target "
                "name with --campaign FILE")


def diagnose(target: Target) -> tuple[SystemFacts, list[Finding]]:
    """The snapshot and every finding: the checks of the target, then the probes usable there."""
    info, findings = examine(target, needed_tools())
    return info, findings + probe_findings(info, target)


def _values(param) -> list[ParamValue]:
    """Values of a matrix key worth asking a benchmark about: every impl, pin and probe, else one
    example."""
    from jitterlab import plugins

    registries = {"impl": plugins.IMPLS, "pin": plugins.PINS, "probe": plugins.PROBES}
    if param.name in registries:
        return list(registries[param.name].names())
    if param.default is not None:
        return [param.parse(param.default, "doctor")]
    example = tomllib.loads(f"v = {param.example}")["v"]
    one = example[0] if isinstance(example, list) and not param.whole else example
    return [param.parse(one, "doctor")]


def needed_tools() -> dict[str, tuple[str, set[str]]]:
    """tool -> (Debian package, who needs it) over every registered benchmark and load."""
    from jitterlab import plugins

    needs: dict[str, tuple[str, set[str]]] = {}
    for entry in plugins.BENCHMARKS:
        bench: plugins.Needs = entry.obj
        params = entry.obj.params  # its Cells: a sample cell of each combination of their values
        for values in itertools.product(*(_values(p) for p in params)):
            keyed = tuple(zip((p.name for p in params), values, strict=True))
            cell = Cell("doctor", entry.name, "idle", keyed)
            who = bench.needer(cell)
            tools = dict(bench.tools(cell))
            if bench.programs(cell):
                tools.update({"make": "make", "cc": "gcc"})
            for tool, package in tools.items():
                needs.setdefault(tool, (package, set()))[1].add(who)
    for entry in plugins.LOADS:
        for tool, package in entry.obj.tools.items():
            needs.setdefault(tool, (package, set()))[1].add(f"load {entry.name}")
    return needs


VIRTUAL_PIN = "vpin"  # the pin every target has, wired to nothing

def probe_findings(info: SystemFacts, target: Target | None = None) -> list[Finding]:
    """The probes usable on the target: those that observe its virtual pin (one that needs a CPU of
    its own, with a second CPU); those that watch an emulated board from outside when the target
    offers what they read; an instrument when the controller (this machine) finds it.
    Informational: no instrument is nothing to fix."""
    from jitterlab.measure.squarewave.bindings import pins_offering, probes_observing
    from jitterlab.measure.squarewave.probes.base import PROBES
    from jitterlab.targets.local import LocalTarget

    n_cpus = info.n_cpus or 1
    usable = [name if n_cpus > 1 or not PROBES.get(name, "probe").needs_cpu
              else f"({name} needs a second CPU)" for name in probes_observing(VIRTUAL_PIN)]
    # probes that follow an emulated board's pin from outside it, through what the board offers
    outside = [e.name for e in PROBES if e.obj.reads is not None and target is not None
               and has(target, e.obj.reads) is not None]
    if outside:
        pins = sorted({pin for name in outside for pin in pins_offering(PROBES.get(name, "probe").needs)})
        usable.append(f"{', '.join(outside)} (on a board line: pins {', '.join(pins)})")
    unit = info.unit.kind if info.unit is not None else None
    if unit:  # a real-time unit's pin: traced by its emulator, or wired to an instrument
        from jitterlab.measure.squarewave.pins.offers import InstrumentInput, TracedOutput, serves

        form = TracedOutput if unit == "emulated" else InstrumentInput
        watching = [e.name for e in PROBES if e.obj.needs and serves(e.obj.needs, (form,))]
        usable.append(f"{', '.join(watching)} (on the {unit} unit's pin: pin unit)")
    controller = LocalTarget(name="controller")
    try:  # what each probe that reads an instrument finds of them here (its `instruments`)
        found = [(e.name, i) for e in PROBES if (i := e.obj.instruments(controller)) is not None]
    finally:
        controller.close()
    usable += [name for name, instruments in found if instruments.usable]
    return [Finding("probes", ", ".join(usable), informational=True),
            *(Finding(i.topic, i.found, informational=True) for _, i in found)]
