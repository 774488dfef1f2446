"""udp-echo: round-trip times of small UDP messages to an echo server, per scheduling policy.

The server (udp-echo-server) runs on the target; the client (udp-echo-client) on the target over
loopback (client = "target") or on the jitterlab machine against the target's `host` address
(client = "controller"). Both run in the cell's policy. The client sends one message every
`interval`, times each send -> reply with CLOCK_MONOTONIC and writes the round trips (ns) to a
file in the run's scratch directory, which is fetched and parsed here.

SCHED_DEADLINE parameters (both programs): period = deadline = interval (1 ms when the interval
is 0), runtime = period / 2. The kernel may refuse them (admission control, period limits,
restricted affinity, cgroups): the run then fails with the kernel's reason and the remedy.
"""

from __future__ import annotations

import contextlib
import re
import socket
from dataclasses import dataclass

import numpy as np

from jitterlab.analysis.latency import latency_metrics, latency_names
from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.udp.peer import need_host, numeric_host, parse_host
from jitterlab.measure.udp.programs import (
    Server,
    Side,
    controller_side,
    is_local,
    program,
    run_to_end,
    warnings_in,
)
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, choice, duration, format_size, integer, size
from jitterlab.model.records import Metric, Warning_
from jitterlab.model.series import Samples
from jitterlab.model.traits import LATENCIES
from jitterlab.model.units import format_ns
from jitterlab.targets.processes import pinned

POLICIES = ("other", "fifo", "rr", "deadline")
DEADLINE_PERIOD_IF_BACK_TO_BACK_NS = 1_000_000
SERVER_SLACK_S = 10.0  # the server's own life limit beyond the client's longest run
_HEADER = "# jitterlab-udp-echo v1 "
_END = re.compile(r"^# end sent=(\d+) received=(\d+) lost=(\d+) late=(\d+)$")
_SAMPLES = re.compile(r"(?:\d+\n)*")
CLIENT = "udp-echo-client"
SERVER = "udp-echo-server"


def _interval(value: object, where: str) -> ParamValue:
    """A duration, or 0 for back to back."""
    if value in (0, "0"):
        return 0
    return duration(1, 3600 * 10**9)(value, where)


def _show_ns(value: ParamValue) -> str:
    """A canonical duration (ns) as people write it; a default is shown as written."""
    return value if isinstance(value, str) else format_ns(value) if value else "0"


def deadline_params(interval_ns: int) -> tuple[int, int]:
    """(runtime_ns, period_ns) of SCHED_DEADLINE for messages every `interval_ns`."""
    period = interval_ns or DEADLINE_PERIOD_IF_BACK_TO_BACK_NS
    return period // 2, period


def sched_flags(policy: str, priority: int, interval_ns: int) -> list[str]:
    if policy == "other":
        return []
    if policy == "deadline":
        runtime, period = deadline_params(interval_ns)
        return ["--policy", "deadline", "--dl-runtime-ns", str(runtime), "--dl-period-ns", str(period)]
    return ["--policy", policy, "--prio", str(priority)]


@dataclass(frozen=True)
class EchoResult:
    """What the client wrote: round trips (ns) of the replies, in send order, and the counts."""

    rtt_ns: np.ndarray
    sent: int
    received: int
    lost: int
    late: int
    header: dict[str, str]


def parse_client_output(text: str) -> EchoResult:
    """Read udp-echo-client's output file; RunFailed (with the text attached) if it is not one."""

    def bad(why: str) -> RunFailed:
        return RunFailed(
            f"{CLIENT} output does not parse: {why}; expected a '{_HEADER.strip()}' header, "
            "one round trip in ns per line and a '# end sent=.. received=.. lost=.. late=..' line",
            attachments={"udp-echo-client.out": text.encode()},
        )

    head, _, rest = text.partition("\n")
    if not head.startswith(_HEADER):
        raise bad(f"first line is {head[:80]!r}")
    header = dict(field.split("=", 1) for field in head[len(_HEADER):].split() if "=" in field)
    body, _, last = rest.rstrip("\n").rpartition("\n")
    if not body and last.startswith("# end"):
        body = ""
    elif body:
        body += "\n"
    end = _END.match(last)
    if end is None:
        raise bad(f"the '# end' line is missing or garbled (last line {last[:80]!r}); cut short?")
    if not _SAMPLES.fullmatch(body):
        raise bad("a round-trip line is not a whole number of ns")
    sent, received, lost, late = map(int, end.groups())
    rtt = np.array(body.split(), dtype=np.int64) if body else np.zeros(0, dtype=np.int64)
    if len(rtt) != received or sent != received + lost:
        raise bad(f"{len(rtt)} round trips for received={received} sent={sent} lost={lost}")
    return EchoResult(rtt, sent, received, lost, late, header)


@dataclass(frozen=True)
class EchoCell(Options):
    size_bytes: int = key("size")
    interval_ns: int = key("interval")  # 0: back to back
    count: int = key("count")  # 0: as many as campaign.duration holds
    timeout_ns: int = key("timeout")
    policy: str = key("policy")
    priority: int = key("priority")
    client: str = key("client")  # "target" or "controller"
    host: str = key("host")
    port: int = key("port")


class UdpEcho(BenchmarkBase):
    headline = ("rtt_p99_ns", "rtt_p50_ns", "rtt_max_ns", "lost_messages")
    metrics = (*latency_names("rtt"), "late_replies", "messages")
    samples = LATENCIES

    params = (
        Param("size", "UDP payload bytes of each message", size(16, 65507), "[64, 512, 1400]", 64,
              show=format_size),
        Param("interval", "time between sends (0: back to back)", _interval, '"1ms"', "1ms",
              show=_show_ns),
        Param("count", "messages per run (0: as many as campaign.duration holds)",
              integer(0, 16 * 1024 * 1024), "10000", 0),
        Param("timeout", "a reply later than this counts as lost", duration(1000, 60 * 10**9),
              '"100ms"', "100ms", show=_show_ns),
        Param("policy", "scheduling policy of server and client", choice(*POLICIES),
              '["other", "fifo", "deadline"]', "other"),
        Param("priority", "real-time priority for fifo and rr", integer(1, 99), "80", 80),
        Param("client", 'where the client runs: "target" (loopback) or "controller" (this machine)',
              choice("target", "controller"), '"target"', "target"),
        Param("host", "the address the client sends to (controller: the target's address)", parse_host,
              '"192.168.1.20"', ""),
        Param("port", "UDP port of the echo server on the target", integer(1, 65535), "15301", 15301),
    )
    record = EchoCell

    def tools(self, cell) -> dict[str, str]:
        return {"make": "make", "cc": "gcc", "taskset": "util-linux"}

    def needs_rt(self, cell) -> bool:
        return cell.param("policy") != "other"

    def label(self, cell) -> str:
        p = EchoCell.of_cell(cell)
        every = f"every {format_ns(p.interval_ns)}" if p.interval_ns else "back to back"
        return f"udp-echo {format_size(p.size_bytes)} {p.policy} {every} {cell.load} (client on {p.client})"

    def check_target(self, cell, settings, where, target) -> None:
        p = EchoCell.of_cell(cell)
        if p.client == "controller":
            need_host(p.host, target, where, 'client = "controller" sends to the target over the network; '
                      f"give target {cell.target!r}'s address")

    def check(self, cell, settings, where) -> None:
        p = EchoCell.of_cell(cell)
        if p.client == "target":
            numeric_host(p.host, where, 'with client = "target" the host is an address of the target itself '
                         '(numeric, e.g. "127.0.0.1")')

    def estimate_s(self, settings, cell) -> float:
        load_s = settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        p = EchoCell.of_cell(cell)
        count, interval_ns = p.count, p.interval_ns
        run_s = count * max(interval_ns, 50_000) / 1e9 if count else settings.duration_ns / 1e9
        return settings.warmup_ns / 1e9 + run_s + load_s + 0.5

    def execute(self, ctx: RunContext) -> Measurement:
        p, settings = EchoCell.of_cell(ctx.cell), ctx.settings
        policy, interval_ns, count, timeout_ns = p.policy, p.interval_ns, p.count, p.timeout_ns
        port = str(p.port)
        flags = sched_flags(policy, p.priority, interval_ns)
        fallback = ["--allow-no-rt"] if flags and not ctx.rt_permitted else []
        warnings: list[Warning_] = []
        # SCHED_DEADLINE refuses a task whose affinity does not span its root domain
        cpus = None if policy == "deadline" else ctx.placement.program_cpus
        if policy == "deadline" and ctx.placement.program_cpus:
            warnings.append(Warning_("SCHED_DEADLINE tasks cannot be pinned: server and client ran "
                                     "on all CPUs, not campaign.cpus.program",
                                     "compare deadline runs with unpinned runs of other policies"))
        longest_ns = settings.warmup_ns + (count * (interval_ns + timeout_ns) if count
                                           else settings.duration_ns + timeout_ns)
        client_timeout_s = (longest_ns + settings.run_timeout_ns) / 1e9
        with self._client_side(ctx) as side:
            # on a remote controller the policy is best effort: the target's is the one measured
            remote_controller = side.is_controller and not is_local(ctx.target)
            host, bind = self._addresses(ctx, side)
            server = Server(
                ctx.target, SERVER,
                [*pinned(cpus), program(ctx.bindir, SERVER), "--bind", bind, "--port", port,
                 "--ready", f"{ctx.scratch}/server.ready",
                 "--max-duration-ns", str(int((client_timeout_s + SERVER_SLACK_S) * 1e9)),
                 *flags, *fallback],
                f"{ctx.scratch}/server.ready", f"{ctx.scratch}/server.log",
            )
            out = f"{side.scratch}/rtt.txt"
            try:
                server.await_ready()
                argv = [
                    *pinned(None if remote_controller else cpus), program(side.bindir, CLIENT),
                    "--host", host, "--port", port, "--out", out,
                    "--size", str(p.size_bytes), "--interval-ns", str(interval_ns),
                    "--count", str(count), "--duration-ns", str(settings.duration_ns),
                    "--warmup-ns", str(settings.warmup_ns), "--timeout-ns", str(timeout_ns),
                    *flags, *(["--allow-no-rt"] if flags and (remote_controller or fallback) else []),
                ]
                client_log = run_to_end(side.target, CLIENT, argv, f"{side.scratch}/client.log",
                                        client_timeout_s)
            finally:
                _, server_log = server.stop()
            local_out = ctx.local_dir / "rtt.txt"
            try:
                side.target.get(out, local_out)
            except OSError:
                raise RunFailed(f"{CLIENT} wrote no output file {out}; its output: "
                                f"{client_log.strip() or '(none)'}") from None
        warnings += warnings_in(server_log, f"{SERVER} on the target")
        where = "controller" if remote_controller else "target"
        warnings += warnings_in(client_log, f"{CLIENT} on the {where}")
        return self._measurement(local_out.read_text(errors="replace"), timeout_ns, warnings)

    @staticmethod
    def _client_side(ctx: RunContext):
        if EchoCell.of_cell(ctx.cell).client == "controller":
            return controller_side(ctx)
        return contextlib.nullcontext(Side(ctx.target, ctx.bindir, ctx.scratch))

    @staticmethod
    def _addresses(ctx: RunContext, side: Side) -> tuple[str, str]:
        """(address the client sends to, address the server binds)."""
        host = EchoCell.of_cell(ctx.cell).host
        if not side.is_controller:
            host = host or "127.0.0.1"
            return host, host
        host = host or "127.0.0.1"  # check() allows no host only for a local target
        try:
            family, *_, address = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)[0]
        except (OSError, IndexError) as exc:
            raise RunFailed(f"cannot resolve matrix.host {host!r} on the controller: {exc}") from None
        return str(address[0]), "::" if family == socket.AF_INET6 else "0.0.0.0"

    @staticmethod
    def _measurement(text: str, timeout_ns: int, warnings: list[Warning_]) -> Measurement:
        result = parse_client_output(text)
        if result.received == 0:
            raise RunFailed(
                f"no echo came back: all {result.sent} messages were lost (timeout {format_ns(timeout_ns)}); "
                "check that the client reaches the server's UDP port (firewall, matrix.host)",
                status="unmeasurable",
                attachments={"udp-echo-client.out": text.encode()},
            )
        metrics = latency_metrics(result.rtt_ns, prefix="rtt")
        metrics += [
            Metric("lost_messages", float(result.lost), "count", direction="lower"),
            Metric("late_replies", float(result.late), "count", direction="lower"),
            Metric("messages", float(result.sent), "count", direction="none"),
        ]
        if result.lost:
            warnings.append(Warning_(
                f"{result.lost} of {result.sent} messages got no reply within {format_ns(timeout_ns)}",
                "their round trips are missing from the rtt metrics; see lost_messages",
            ))
        return Measurement(metrics, series={"rtt": Samples(result.rtt_ns, "ns")}, warnings=warnings)


BENCHMARKS.add(
    "udp-echo",
    "round trips of UDP messages to an echo server on the target, per scheduling policy "
    "(other, fifo, rr, deadline); metrics: rtt latency, lost messages",
    UdpEcho(),
)
