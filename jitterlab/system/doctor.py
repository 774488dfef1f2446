"""`jitterlab doctor TARGET`: is this machine ready to be measured, and what should be fixed?

Connects like a campaign would, reads the sysinfo snapshot (sysinfo.snapshot / sysinfo.checks),
looks for every tool any benchmark or load may need, and prints one line per topic with its fix.
"""

from __future__ import annotations

import itertools
import shutil
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from jitterlab import plugins
from jitterlab.campaign.file import load_campaign
from jitterlab.cli.paths import path_arg
from jitterlab.model.errors import UserError
from jitterlab.model.params import ParamValue
from jitterlab.model.records import Cell, Warning_
from jitterlab.system import sysinfo, tuning
from jitterlab.targets.base import Target
from jitterlab.targets.labgrid.host_key import host_key_warning


@dataclass(frozen=True)
class Finding:
    """One topic of the diagnosis; `fix` None means all is well there."""

    topic: str
    state: str
    fix: str | None = None


def open_target(spec: str, campaign: Path | None, ssh_options: Mapping[str, object]) -> Target:
    """TARGET as `jitterlab doctor` takes it: a campaign's target name, `local`, or ssh://user@host:port."""
    if campaign is not None:
        loaded = load_campaign(campaign)
        specs = {s.name: s for s in loaded.targets}
        if spec not in specs:
            raise UserError(f"TARGET {spec!r}: not a target of {campaign}; its targets: {', '.join(specs)}")
        found = specs[spec]
        return plugins.TARGETS.get(found.kind, f"{campaign}: target.kind")(found.name, found.options)
    if spec == "local":
        return plugins.TARGETS.get("local", "TARGET")("local", {})
    if spec.startswith("ssh://"):
        from jitterlab.targets.ssh.options import from_url
        from jitterlab.targets.ssh.target import SSHTarget

        options = from_url(spec, "TARGET", ssh_options)
        return SSHTarget(options.host, options).connect()
    raise UserError(
        f"TARGET {spec!r}: give `local`, ssh://user@host:port, or a target name with --campaign FILE"
    )


def _values(param) -> list[ParamValue]:
    """Values of a matrix key worth asking a benchmark about: every impl, pin and probe, else one
    example."""
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
    needs: dict[str, tuple[str, set[str]]] = {}
    for entry in plugins.BENCHMARKS:
        bench = entry.obj
        params = getattr(bench, "params", ())
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


def _missing(target: Target, tools: list[str]) -> list[str]:
    script = 'for t; do command -v "$t" >/dev/null 2>&1 || echo "$t"; done'
    return target.run(["sh", "-c", script, "sh", *tools], timeout_s=30).stdout.split()


def examine(target: Target) -> tuple[dict, list[Finding]]:
    """The snapshot and the findings, tools first."""
    info = sysinfo.snapshot(target)
    needs = needed_tools()
    cross = getattr(target, "cross_cc", None)
    if cross:  # programs are built here, not there
        needs = {t: v for t, v in needs.items() if t not in ("make", "cc")}
    missing = _missing(target, sorted(needs))
    present = [t for t in sorted(needs) if t not in missing]
    findings = [Finding("tools", f"{len(present)} of {len(needs)} present: {', '.join(present)}")]
    if missing:
        packages = sorted({needs[t][0] for t in missing})
        who = "; ".join(f"{t} ({needs[t][0]}) for {', '.join(sorted(needs[t][1]))}" for t in missing)
        findings.append(Finding("missing tools", who, f"apt install {' '.join(packages)}"))
    if cross and shutil.which(cross.split()[0]) is None:
        findings.append(Finding("cross cc", f"{cross} is not installed here", "install the cross compiler"))
    warning = host_key_warning(target)
    if warning is not None:
        findings.append(Finding("host key", warning.message, warning.remedy))
    covered: set[str] = set()

    def topic(name: str, state: str, warning: Warning_ | None) -> None:
        if warning is not None:
            covered.add(warning.message)
        if warning is None:
            findings.append(Finding(name, state))
        else:
            findings.append(Finding(name, warning.message, warning.remedy))

    rt = info.get("rt_permission")
    topic("RT permission", "SCHED_FIFO permitted" if rt else "unknown (no chrt: apt install util-linux)",
          sysinfo.check_rt_permission(info))  # fmt: skip
    governors = sorted({c.get("governor") or "-" for c in info.get("cpus") or []})
    topic("CPU governor", "/".join(governors) if governors != ["-"] and governors else "no cpufreq (fixed)",
          sysinfo.check_governor(info))  # fmt: skip
    iso = info.get("isolcpus")
    topic("isolcpus", sysinfo._fmt_cpus(iso) if iso else "none", sysinfo.check_isolated_cpus(info))
    topic("clocksource", str(info.get("clocksource")), sysinfo.check_clocksource(info))
    findings.append(_preemption(info.get("preemption")))
    runtime = info.get("rt_runtime_us")
    topic("RT throttling", "off" if runtime == -1 else "unknown", sysinfo.check_rt_throttling(info))
    topic("virtualization", str(info.get("virtualization") or "unknown"), sysinfo.check_virtualized(info))
    loadavg = info.get("loadavg")
    topic("load average", f"{loadavg[0]:.2f}" if loadavg else "unknown", sysinfo.check_load_average(info))
    for name, state, warning in tuning.topics(info):  # idle states, nohz/rcu, IRQs, SMT, THP, SMI, memory
        topic(name, state, warning)
    for warning in sysinfo.checks(info):
        if warning.message not in covered:
            findings.append(Finding("other", warning.message, warning.remedy))
    findings += probe_findings(info)
    return info, findings


def probe_findings(info: dict) -> list[Finding]:
    """The probes usable on the target: vpin needs a second CPU; an instrument is usable when the
    controller (this machine) finds it. Informational: no instrument is nothing to fix."""
    from jitterlab.targets.local import LocalTarget

    n_cpus = int(info.get("n_cpus") or 1)
    usable = ["self", "vpin" if n_cpus > 1 else "(vpin needs a second CPU)"]
    controller = LocalTarget(name="controller")
    try:
        if controller.run(["sh", "-c", 'command -v "$1"', "sh", "sigrok-cli"]).ok:
            from jitterlab.measure.squarewave.probes.sigrok import scan_devices

            found = scan_devices(controller)
            analyzers = "; ".join(found) if found else "none found by sigrok-cli --scan"
            usable += ["sigrok"] if any(not line.startswith("demo ") for line in found) else []
        else:
            analyzers = "sigrok-cli is not installed here (apt install sigrok-cli to use an analyzer)"
    finally:
        controller.close()
    resources = visa_resources()
    usable += ["scpi"] if any(r.startswith(("USB", "GPIB")) for r in resources) else []
    return [Finding("probes", ", ".join(usable)), Finding("logic analyzers", analyzers),
            Finding("VISA resources", "; ".join(resources) or "none on USB, GPIB or serial (instruments on "
                    "the LAN are not searched: give their address as probes.scpi.resource)")]


def visa_resources() -> list[str]:
    """VISA resources pyvisa-py finds on USB, GPIB and serial lines. LAN discovery broadcasts to the
    network, so it is left out: a LAN instrument is named by its address."""
    try:
        import pyvisa_py.highlevel  # noqa: F401  (registers the session classes)
        from pyvisa_py.sessions import Session
    except ImportError:
        return ["(pyvisa-py is not installed: pip install 'jitterlab[instruments]' to use an instrument)"]
    found: list[str] = []
    for (interface, _), session in Session.iter_valid_session_classes():
        if "tcpip" in interface.name or "prlgx" in interface.name:
            continue
        try:
            found += session.list_resources()
        except Exception:  # a bus whose library is missing (pyusb, gpib-ctypes) lists nothing
            continue
    return sorted(set(found))


def _preemption(model: str | None) -> Finding:
    if model is None:
        return Finding("preemption", "unknown (no kernel config readable)")
    if model == "rt" or model.endswith("full") or model.endswith("lazy"):
        return Finding("preemption", model)
    return Finding(
        "preemption",
        f"{model}: a task waits for the kernel to reach a preemption point",
        "boot with preempt=full (kernels with PREEMPT_DYNAMIC) or install a PREEMPT_RT kernel "
        "(apt install linux-image-rt-amd64 / -arm64)",
    )


def describe(info: dict) -> str:
    parts = [
        info.get("os_name") or "?",
        f"kernel {info.get('kernel_release') or '?'} ({info.get('machine') or '?'})",
        f"{info.get('n_cpus') or '?'} CPUs",
    ]
    if info.get("virtualization") not in (None, "none"):
        parts.append(f"virtualized ({info['virtualization']})")
    return ", ".join(parts)


def add_command(sub) -> None:
    doctor = sub.add_parser(
        "doctor",
        help="check that a target is ready to be measured, and say what to fix",
        description="Connect to TARGET and report tools present/missing (with the package to install), "
        "RT permission, CPU governor, isolcpus, clocksource, preemption model, RT throttling, idle states "
        "and cpu_dma_latency, nohz_full/rcu_nocbs, IRQ affinity, SMT, transparent hugepages, the SMI "
        "counter, memory available and BogoMIPS, each with its fix, then the probes usable there (vpin "
        "with a second CPU, logic analyzers and VISA instruments found on this machine). "
        "TARGET: `local`, ssh://user@host:port, or a target name of --campaign FILE. "
        "Exit status 0: all is well; 1: something needs fixing; 2: bad input or unreachable.",
    )
    doctor.add_argument("target", metavar="TARGET", help="local | ssh://user@host:port | a target name")
    doctor.add_argument("--campaign", type=path_arg, metavar="FILE",
                        help="take TARGET from this campaign file")
    doctor.add_argument("--key", metavar="FILE", help="with ssh://: identity file")
    doctor.add_argument("--known-hosts", metavar="FILE", help="with ssh://: known_hosts file")
    doctor.add_argument(
        "--accept-new-host-key", action="store_true", help="with ssh://: trust a host key seen the first time"
    )
    doctor.add_argument("--connect-timeout", metavar="DURATION", help='with ssh://: e.g. "10s"')
    doctor.set_defaults(func=cmd_doctor)


def _unreachable(reason: str) -> int:
    from rich.markup import escape

    from jitterlab.report.console import SafeConsole

    SafeConsole(stderr=True).print(f"[bold red]error:[/] {escape(reason)}", highlight=False, soft_wrap=True)
    return 2


def cmd_doctor(args) -> int:
    from rich.markup import escape

    from jitterlab.model.errors import TargetLost
    from jitterlab.report.console import SafeConsole

    out = SafeConsole(highlight=False, soft_wrap=True)
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
        info, findings = examine(target)
    except TargetLost as exc:
        return _unreachable(exc.reason)
    finally:
        target.close()
    out.print(f"[bold]{escape(args.target)}[/]: {escape(describe(info))}")
    width = max(len(f.topic) for f in findings)
    for f in findings:
        mark = "[green]ok[/]  " if f.fix is None else "[red]fix[/] "
        out.print(f"  {mark} {f.topic:<{width}}  {escape(str(f.state))}")
    fixes = [f for f in findings if f.fix is not None]
    if not fixes:
        out.print("[green]all is well[/]: nothing to fix")
        return 0
    out.print(f"[bold]{len(fixes)} to fix[/]:")
    for f in fixes:
        out.print(f"  - {f.topic}: {escape(f.fix)}")
    return 1
