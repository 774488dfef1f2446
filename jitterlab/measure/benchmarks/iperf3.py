"""The `iperf3` benchmark: TCP or UDP throughput (and UDP jitter and loss) from the target.

With `peer = ""` jitterlab starts a one-off iperf3 server on the target's loopback (port 15211,
not the `net` load's 15201, so iperf3 can be measured under the net load); with a `peer` the
server must already run there. One client test per run, `campaign.duration` long (iperf3 counts
whole seconds: the duration is rounded up; whole seconds of `campaign.warmup` are omitted with
-O), read from its --json report. iperf3 exits 0 with --json even when the test failed: the
report's "error" tells.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.iperf3 import (
    CONNECT_TIMEOUT_MS,
    HOST,
    START_TIMEOUT_S,
    await_listening,
    is_listening,
    json_error,
    parse_bitrate,
    peer_problem,
    server_argv,
    show_bitrate,
)
from jitterlab.measure.tools.output import first_json
from jitterlab.measure.tools.run import whole_seconds
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, auto, choice, integer, size
from jitterlab.model.records import Metric
from jitterlab.model.series import Samples
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.processes import RecordedProcess, describe_exit, pinned, run_recorded, spawn_recorded

DEFAULT_PORT = 15211
UDP_DEFAULT_BITRATE = 1_000_000_000
SERVER_LOG = "iperf3-server.json"
MAX_UDP_LENGTH = 65507
MAX_LENGTH = 1 << 20  # iperf3's largest buffer
_PEER_PORT = re.compile(r"^\[(?P<v6>[^\]]+)\](?::(?P<port6>\d+))?$|^(?P<host>[^:]+):(?P<port>\d+)$")


def split_peer(peer: str, port: int) -> tuple[str, int]:
    """("host", port) of "host", "host:port", "[v6]:port" or a bare IPv6 address."""
    match = _PEER_PORT.match(peer)
    if match is None:
        return peer, port
    host = match["v6"] or match["host"]
    given = match["port6"] or match["port"]
    return host, int(given) if given else port


def parse_peer(value: object, where: str) -> ParamValue:
    if value == "":
        return ""
    if isinstance(value, str):
        host, port = split_peer(value, DEFAULT_PORT)
        if HOST.match(host) and not host.startswith("-") and 1 <= port <= 65535:
            return value
    raise UserError(
        f'{where}: expected "" (a server jitterlab starts on the target) or host[:port] of a '
        f'running `iperf3 -s`, like "192.168.1.10" or "192.168.1.10:5201", got {value!r}'
    )


# the names parse_report can give: of every report, and of the protocol's
COMMON_NAMES = ("mbit_per_s", "sent_mbit_per_s", "cpu_host_percent", "cpu_remote_percent")
PROTOCOL_NAMES = {"tcp": ("retransmits",), "udp": ("jitter_ns", "loss_ratio", "lost_packets", "packets")}


def parse_report(text: str) -> tuple[list[Metric], dict[str, Samples]]:
    """Metrics and the per-interval throughput of one iperf3 --json client report.

    Raises RunFailed naming what is missing, with the report attached."""
    raw = {"iperf3-client.json": text.encode()}
    data = first_json(text)
    if data is None:
        raise RunFailed("iperf3 printed no JSON report (expected the output of iperf3 --json; "
                        "is it cut short?)", attachments=raw)
    if data.get("error"):
        raise RunFailed(f"iperf3 says: {data['error']}", attachments=raw)
    try:
        protocol = str(data["start"]["test_start"]["protocol"])
        end = data["end"]
        received = end.get("sum_received") or end["sum"]  # iperf3 < 3.11 has one UDP "sum"
        metrics = [Metric("mbit_per_s", float(received["bits_per_second"]) / 1e6, "Mbit/s", "", "higher")]
        if "sum_sent" in end:
            sent = float(end["sum_sent"]["bits_per_second"]) / 1e6
            metrics.append(Metric("sent_mbit_per_s", sent, "Mbit/s", "", "none"))
        if protocol == "TCP":
            if "retransmits" in end.get("sum_sent", {}):  # only Linux senders count them
                metrics.append(Metric("retransmits", float(end["sum_sent"]["retransmits"]), "count", "",
                                      "lower"))
        elif protocol == "UDP":
            seen, lost = int(received["packets"]), int(received["lost_packets"])
            if seen <= 0:
                raise RunFailed("iperf3: no UDP datagram arrived", "unmeasurable", attachments=raw)
            # the receiver's count is the highest sequence number it saw: when the last datagrams
            # are lost it is less than what was sent, so the loss is over the sender's count, as
            # iperf3's own lost_percent (iperf3 < 3.11 reports only the receiver's; a side that did
            # not send says 0)
            sent = max(int(end["sum_sent"]["packets"]) if "sum_sent" in end else 0, seen)
            metrics += [
                Metric("jitter_ns", float(received["jitter_ms"]) * 1e6, "ns", "", "lower"),
                Metric("loss_ratio", lost / sent, "fraction", "", "lower"),
                Metric("lost_packets", float(lost), "count", "", "lower"),
                Metric("packets", float(sent), "count", "", "none"),
            ]
        else:
            raise RunFailed(f"iperf3 reports protocol {protocol!r}; expected TCP or UDP", attachments=raw)
        cpu = end.get("cpu_utilization_percent", {})
        for side in ("host", "remote"):
            if f"{side}_total" in cpu:
                metrics.append(Metric(f"cpu_{side}_percent", float(cpu[f"{side}_total"]), "%", "", "none"))
        intervals = [int(i["sum"]["bits_per_second"]) for i in data.get("intervals", [])
                     if not i["sum"].get("omitted")]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise RunFailed(f"iperf3's JSON report lacks the expected totals ({type(exc).__name__}: {exc}); "
                        "expected end.sum_received (or end.sum) with bits_per_second", attachments=raw
                        ) from None
    if metrics[0].value <= 0:
        raise RunFailed("iperf3 moved no data", "unmeasurable", attachments=raw)
    return metrics, {"interval_bits_per_s": Samples(intervals, "bit/s")}


@dataclass(frozen=True)
class Iperf3Cell(Options):
    protocol: str
    direction: str
    bitrate_bps: int | str = key("bitrate")  # 0: unlimited; "auto": unlimited for tcp, 1G for udp
    parallel: int
    length_bytes: int | str = key("length")  # "auto": iperf3's own
    port: int
    peer: str  # host[:port]; "": a server jitterlab starts on the target's loopback


class Iperf3(BenchmarkBase):
    headline = ("mbit_per_s", "retransmits", "jitter_ns", "loss_ratio")

    params = (
        Param("protocol", "tcp or udp", choice("tcp", "udp"), '["tcp", "udp"]', default="tcp"),
        Param("direction", "send (target to server) or receive (iperf3 -R)", choice("send", "receive"),
              '"receive"', default="send"),
        Param("bitrate", 'target bits/s, "100M" or 0 = unlimited (auto: unlimited for tcp, 1G for udp)',
              auto(parse_bitrate), '"100M"', default="auto", show=show_bitrate),
        Param("parallel", "parallel streams (iperf3 -P)", integer(1, 128), "4", default=1),
        Param("length", "buffer / datagram size (iperf3 -l; auto: iperf3's own)",
              auto(size(1, MAX_LENGTH)), '"1400"', default="auto"),
        Param("port", "the server's port", integer(1, 65535), "5201", default=DEFAULT_PORT),
        Param("peer", 'host[:port] running `iperf3 -s`; "": a server jitterlab starts on the '
              "target's loopback", parse_peer, '"192.168.1.10"', default="", show=lambda v: v or '""'),
    )
    record = Iperf3Cell

    def metric_names(self, cell) -> frozenset[str]:
        return frozenset((*COMMON_NAMES, *PROTOCOL_NAMES[Iperf3Cell.of_cell(cell).protocol]))

    def tools(self, cell) -> dict[str, str]:
        return {"iperf3": "iperf3", "taskset": "util-linux"}

    def estimate_s(self, settings, cell) -> float:
        load_s = settings.load_warmup_ns / 1e9 if cell.load != "idle" else 0.0
        return _seconds(settings.duration_ns) + settings.warmup_ns // 10**9 + load_s + 1.0

    def label(self, cell) -> str:
        p = Iperf3Cell.of_cell(cell)
        rate = f" {show_bitrate(p.bitrate_bps)}" if p.bitrate_bps != "auto" else ""
        streams = f" x{p.parallel}" if p.parallel != 1 else ""
        where = p.peer or "loopback"
        return f"iperf3 {p.protocol} {p.direction}{rate}{streams} {where} {cell.load}"

    def check(self, cell, settings, where) -> None:
        p = Iperf3Cell.of_cell(cell)
        length = p.length_bytes
        if p.protocol == "udp" and isinstance(length, int) and length > MAX_UDP_LENGTH:
            raise UserError(f"{where}.length: a UDP datagram carries at most "
                            f"{MAX_UDP_LENGTH} bytes, got {length}")

    def preflight(self, target: Target, settings, cells, where) -> None:
        """Before the campaign: every `peer` must answer a one-second iperf3 test from the target."""
        asked: set[tuple[str, int, bool]] = set()
        for cell in cells:
            if cell.benchmark != "iperf3":
                continue
            p = Iperf3Cell.of_cell(cell)
            if not p.peer:
                continue
            host, port = split_peer(p.peer, p.port)
            server = (host, port, p.protocol == "udp")
            if server in asked:
                continue
            asked.add(server)
            reason = peer_problem(target, *server)
            if reason is not None:
                raise UserError(
                    f"{where}.peer: {host}:{port} does not answer iperf3 from target "
                    f"{target.name!r} ({reason}); start `iperf3 -s -p {port}` there, or set "
                    'peer = "" to measure the target\'s loopback'
                )

    def execute(self, ctx: RunContext) -> Measurement:
        p, target = Iperf3Cell.of_cell(ctx.cell), ctx.target
        peer = p.peer
        host, port = split_peer(peer or "127.0.0.1", p.port)
        cpus = ctx.placement.program_cpus
        pin = pinned(cpus)
        server = _start_server(ctx, pin, port) if not peer else None
        try:
            text = _run_client(ctx, [*pin, *self.client_argv(ctx, host, port)])
        finally:
            server_text = _stop_server(target, server, f"{ctx.scratch}/{SERVER_LOG}") if server else ""
        try:
            metrics, series = parse_report(text)
        except RunFailed as exc:
            if server_text:
                exc.attachments["iperf3-server.json"] = server_text.encode()
            raise
        return Measurement(metrics, series, attachments={"iperf3-client.json": text.encode()})

    def client_argv(self, ctx: RunContext, host: str, port: int) -> list[str]:
        p, settings = Iperf3Cell.of_cell(ctx.cell), ctx.settings
        udp = p.protocol == "udp"
        bitrate = p.bitrate_bps
        if bitrate == "auto":
            bitrate = UDP_DEFAULT_BITRATE if udp else None
        argv = ["iperf3", "-c", host, "-p", str(port), "-t", str(_seconds(settings.duration_ns)),
                "-P", str(p.parallel), "--connect-timeout", str(CONNECT_TIMEOUT_MS), "--json"]
        if settings.warmup_ns >= 10**9:
            argv += ["-O", str(settings.warmup_ns // 10**9)]
        if udp:
            argv.append("-u")
        if bitrate is not None:
            argv += ["-b", str(bitrate)]
        if isinstance(p.length_bytes, int):
            argv += ["-l", str(p.length_bytes)]
        if p.direction == "receive":
            argv.append("-R")
        return argv


def _seconds(duration_ns: int) -> int:
    """iperf3's -t counts whole seconds: rounded up, like every whole-second tool here."""
    return whole_seconds(duration_ns)


def _start_server(ctx: RunContext, pin: list[str], port: int) -> RecordedProcess:
    if is_listening(ctx.target, port):  # else a stranger's socket would pass for our server's
        raise RunFailed(f"port {port} is already in use on the target; set matrix.port to a free one")
    log = f"{ctx.scratch}/{SERVER_LOG}"
    server = spawn_recorded(ctx.target, [*pin, *server_argv("127.0.0.1", port)], log_path=log)

    def alive_or_fail() -> None:
        rc = server.poll()
        if rc is not None:
            text = ctx.target.run(["cat", log]).stdout
            server.stop()
            why = json_error(text) or text.strip()[-300:] or "no output"
            raise RunFailed(f"the iperf3 server on port {port} exited ({describe_exit(rc)}): {why}",
                            attachments={"iperf3-server.json": text.encode()})

    try:
        if not await_listening(ctx.target, port, alive_or_fail):
            raise RunFailed(f"the iperf3 server did not listen on port {port} within {START_TIMEOUT_S:g}s")
    except BaseException:
        server.stop()
        raise
    return server


def _run_client(ctx: RunContext, argv: list[str]) -> str:
    """Run the client to its end; return its output (the JSON report)."""
    log = f"{ctx.scratch}/iperf3-client.json"
    settings = ctx.settings
    limit_s = (_seconds(settings.duration_ns) * 10**9 + settings.warmup_ns + settings.run_timeout_ns) / 1e9
    limit_s += CONNECT_TIMEOUT_MS / 1000
    rc = run_recorded(ctx.target, argv, log, timeout_s=limit_s, name="iperf3",
                      budget="duration + warmup + campaign.run_timeout")
    text = ctx.target.run(["cat", log]).stdout
    if rc != 0 and not json_error(text):
        raise RunFailed(f"iperf3 exited with {describe_exit(rc)}: {text.strip()[-300:] or 'no output'}",
                        attachments={"iperf3-client.json": text.encode()})
    return text


def _stop_server(target: Target, server: RecordedProcess, log: str) -> str:
    """Let the one-off server end by itself (it does once its client is gone); return its report."""
    with contextlib.suppress(CommandTimeout):
        server.wait(3.0)
    server.stop()
    return target.run(["cat", log]).stdout


BENCHMARKS.add(
    "iperf3",
    "iperf3 TCP/UDP throughput from the target (loopback server or a peer); metrics: Mbit/s, "
    "retransmits, UDP jitter and loss",
    Iperf3(),
)
