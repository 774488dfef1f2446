"""pps: how many small UDP packets per second a sender puts out and a receiver takes in.

pps-send sends `size`-byte packets with sendmmsg in batches of `batch`, as fast as it can
(rate 0) or paced to `rate` packets/s, for campaign.duration; pps-recv counts them with recvmmsg
(4 MiB socket buffer). direction "loopback" runs both on the target over its loopback interface;
"send" (target -> controller) and "receive" (controller -> target) cross the real network, to
`host`: the controller's address as the target sees it, or the target's address. The warm-up
does not apply: every packet of the run counts.
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket
import time
from dataclasses import dataclass

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.udp.peer import need_host, numeric_host, parse_host
from jitterlab.measure.udp.programs import (
    Server,
    Side,
    controller_side,
    program,
    read_text,
    run_to_end,
)
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, choice, format_size, integer, size
from jitterlab.model.records import Metric, Warning_
from jitterlab.targets.processes import pinned

SENDER, RECEIVER = "pps-send", "pps-recv"
DRAIN_S = 0.2  # the receiver reads what is still queued after the sender ends
RCVBUF_BYTES = 4 << 20
_SEND_KEYS = ("sent", "bytes", "elapsed_ns", "send_errors")
_RECV_KEYS = ("received", "bytes", "first_ns", "last_ns", "drops", "rcvbuf")


def parse_stats(text: str, program_name: str) -> dict[str, int]:
    """One stats line of pps-send or pps-recv -> its counters; RunFailed if it is not one."""
    keys = _SEND_KEYS if program_name == SENDER else _RECV_KEYS
    header = f"jitterlab-{program_name} v1 "
    line = text.strip()
    fields = dict(f.split("=", 1) for f in line[len(header):].split() if "=" in f)
    missing = [k for k in keys if not fields.get(k, "").isdigit()]
    if not line.startswith(header) or "\n" in line or missing:
        why = f"no whole number for {', '.join(missing)}" if missing and line.startswith(header) else (
            f"got {line[:80]!r}" if line else "it is empty")
        raise RunFailed(
            f"{program_name} stats do not parse ({why}); expected one line "
            f"'{header}{' '.join(k + '=N' for k in keys)}'",
            attachments={f"{program_name}.stats": text.encode()},
        )
    return {k: int(fields[k]) for k in keys}


def pps_metrics(sent: dict[str, int], received: dict[str, int]) -> list[Metric]:
    """Rates over the sender's active time, so sent and received compare like for like."""
    elapsed_s = sent["elapsed_ns"] / 1e9
    if sent["sent"] == 0 or elapsed_s <= 0:
        raise RunFailed(f"{SENDER} sent nothing ({sent['send_errors']} sends refused)", "unmeasurable")
    n_sent, n_received = sent["sent"], received["received"]
    return [
        Metric("sent_pps", n_sent / elapsed_s, "packets/s", direction="higher"),
        Metric("received_pps", n_received / elapsed_s, "packets/s", direction="higher"),
        Metric("received_mbit_per_s", received["bytes"] * 8 / elapsed_s / 1e6, "Mbit/s", direction="higher"),
        Metric("loss_ratio", max(0, n_sent - n_received) / n_sent, "fraction", direction="lower"),
        Metric("sent_packets", float(n_sent), "count", direction="none"),
        Metric("received_packets", float(n_received), "count", direction="none"),
        Metric("socket_drops", float(received["drops"]), "count", direction="lower"),
        Metric("send_errors", float(sent["send_errors"]), "count", direction="lower"),
    ]


@dataclass(frozen=True)
class PpsCell(Options):
    size_bytes: int = key("size")  # UDP payload of each packet
    rate_pps: int = key("rate")  # 0: as fast as possible
    batch: int  # packets per sendmmsg/recvmmsg call
    direction: str  # "loopback", "send" (target -> controller) or "receive"
    host: str  # the receiver's address ("": loopback, or a local target)
    port: int


class Pps(BenchmarkBase):
    headline = ("received_pps", "sent_pps", "loss_ratio")
    metrics = ("received_mbit_per_s", "sent_packets", "received_packets", "socket_drops", "send_errors")

    params = (
        Param("size", "UDP payload bytes of each packet", size(1, 65507), "[64, 1400]", 64,
              show=format_size),
        Param("rate", "packets/s to send (0: as fast as possible)", integer(0, 10**9), "100000", 0),
        Param("batch", "packets per sendmmsg/recvmmsg call", integer(1, 1024), "32", 32),
        Param("direction", '"loopback" (both on the target), "send" (target -> controller) or '
              '"receive" (controller -> target)', choice("loopback", "send", "receive"),
              '"loopback"', "loopback"),
        Param("host", "the receiver's address (send: the controller's, receive: the target's)", parse_host,
              '"192.168.1.20"', ""),
        Param("port", "UDP port of the receiver", integer(1, 65535), "15401", 15401),
    )
    record = PpsCell

    def tools(self, cell) -> dict[str, str]:
        return {"make": "make", "cc": "gcc", "taskset": "util-linux"}

    def label(self, cell) -> str:
        p = PpsCell.of_cell(cell)
        rate = f"{p.rate_pps}/s" if p.rate_pps else "max"
        return f"pps {format_size(p.size_bytes)} {rate} x{p.batch} {p.direction} {cell.load}"

    def check_target(self, cell, settings, where, target) -> None:
        p = PpsCell.of_cell(cell)
        if p.direction != "loopback":
            whose = "the controller's address as the target reaches it" if p.direction == "send" else (
                f"target {cell.target!r}'s address")
            need_host(p.host, target, where, f'direction = "{p.direction}" needs {whose}')

    def check(self, cell, settings, where) -> None:
        p = PpsCell.of_cell(cell)
        if p.direction != "receive":  # the target sends to it
            numeric_host(p.host, where,
                         f'with direction = "{p.direction}" give a numeric address, e.g. "192.168.1.20"')

    def estimate_s(self, settings, cell) -> float:
        return super().estimate_s(settings, cell) + DRAIN_S

    def execute(self, ctx: RunContext) -> Measurement:
        p, settings = PpsCell.of_cell(ctx.cell), ctx.settings
        direction = p.direction
        port, batch = str(p.port), str(p.batch)
        target_side = Side(ctx.target, ctx.bindir, ctx.scratch)
        with _maybe_controller(ctx, direction) as controller:
            sender = controller if direction == "receive" else target_side
            receiver = controller if direction == "send" else target_side
            dest, bind = _addresses(p.host, direction)
            cpus = ctx.placement.program_cpus
            run_timeout_s = (settings.duration_ns + settings.run_timeout_ns) / 1e9
            recv_stats = f"{receiver.scratch}/recv.stats"
            server = Server(
                receiver.target, RECEIVER,
                [*pinned(cpus if receiver is target_side else None), program(receiver.bindir, RECEIVER),
                 "--bind", bind, "--port", port, "--batch", batch, "--rcvbuf", str(RCVBUF_BYTES),
                 "--ready", f"{receiver.scratch}/recv.ready", "--stats", recv_stats,
                 "--max-duration-ns", str(int((run_timeout_s + 30) * 1e9))],
                f"{receiver.scratch}/recv.ready", f"{receiver.scratch}/recv.log",
            )
            send_stats = f"{sender.scratch}/send.stats"
            try:
                server.await_ready()
                run_to_end(
                    sender.target, SENDER,
                    [*pinned(cpus if sender is target_side else None), program(sender.bindir, SENDER),
                     "--host", dest, "--port", port, "--size", str(p.size_bytes),
                     "--batch", batch, "--rate", str(p.rate_pps),
                     "--duration-ns", str(settings.duration_ns), "--stats", send_stats],
                    f"{sender.scratch}/send.log", run_timeout_s,
                )
                time.sleep(DRAIN_S)
            finally:
                rc, recv_log = server.stop()
            if rc != 0:
                raise RunFailed(f"{RECEIVER} exited with status {rc}: {recv_log.strip() or '(no output)'}")
            sent = parse_stats(read_text(sender.target, send_stats), SENDER)
            received = parse_stats(read_text(receiver.target, recv_stats), RECEIVER)
        warnings = []
        if received["rcvbuf"] < RCVBUF_BYTES:
            warnings.append(Warning_(
                f"the receiver got a {received['rcvbuf']}-byte socket buffer, not {RCVBUF_BYTES}",
                "raise net.core.rmem_max (sysctl -w net.core.rmem_max=8388608) or run as root",
            ))
        return Measurement(pps_metrics(sent, received), warnings=warnings)


def _maybe_controller(ctx: RunContext, direction: str) -> contextlib.AbstractContextManager:
    return contextlib.nullcontext(None) if direction == "loopback" else controller_side(ctx)


def _addresses(host: str, direction: str) -> tuple[str, str]:
    """(address the sender sends to, address the receiver binds)."""
    if direction == "loopback":
        host = host or "127.0.0.1"
        return host, host
    host = host or "127.0.0.1"  # check() allows no host only for a local target
    if direction == "send":
        return host, "::" if ipaddress.ip_address(host).version == 6 else "0.0.0.0"
    try:
        family, *_, address = socket.getaddrinfo(host, None, type=socket.SOCK_DGRAM)[0]
    except (OSError, IndexError) as exc:
        raise RunFailed(f"cannot resolve matrix.host {host!r} on the controller: {exc}") from None
    return str(address[0]), "::" if family == socket.AF_INET6 else "0.0.0.0"


BENCHMARKS.add(
    "pps",
    "small UDP packets per second a sender sends and a receiver counts (sendmmsg/recvmmsg), "
    "over loopback or to/from the controller; metrics: sent/received packets/s, loss ratio",
    Pps(),
)
