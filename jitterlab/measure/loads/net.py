"""The `net` load: a UDP flood with iperf3, to the target's loopback or to a `peer` host.

On loopback jitterlab starts a one-off server (`iperf3 -s -1`, bound to the loopback address);
with another `peer` the server must already run there (loopback skips the NIC, so a real board
needs a peer to feel interrupts). iperf3 3.12 stops on SIGINT or SIGTERM mid-test and still
writes its JSON report (with "error": "interrupt - the client has terminated"): stop() sends
SIGINT and reads the sender's totals from it. The client's `-t` bounds its life; the one-off
server exits when the client goes, or after --idle-timeout if the client never came.
"""

from __future__ import annotations

import contextlib
import signal
import time
from dataclasses import dataclass

from jitterlab.measure.loads.base import (
    LOADS,
    LoadContext,
    LoadSpec,
    Tool,
    lifetime_s,
)
from jitterlab.measure.tools.iperf3 import (
    CONNECT_TIMEOUT_MS,
    HOST,
    START_TIMEOUT_S,
    await_listening,
    is_loopback,
    json_error,
    parse_bitrate,
    peer_problem,
    server_argv,
    show_bitrate,
)
from jitterlab.measure.tools.output import first_json
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, ParamValue, integer, parse_options
from jitterlab.model.records import Metric
from jitterlab.targets.base import CommandTimeout, Target
from jitterlab.targets.processes import describe_exit


def _host(value: object, where: str) -> ParamValue:
    if not isinstance(value, str) or not HOST.match(value) or value.startswith("-"):
        raise UserError(f"{where}: expected a host name or address running `iperf3 -s`, like "
                        f'"192.168.1.10" (default: "127.0.0.1"), got {value!r}')
    return value


PARAMS = (
    Param("peer", "where the iperf3 server runs (127.0.0.1: one jitterlab starts on the target)", _host,
          '"192.168.1.10"', default="127.0.0.1"),
    Param("port", "the server's port", integer(1, 65535), "5201", default=15201),
    Param("bitrate", 'bits/s to send, "100M" or 0 = unlimited (iperf3 -b)', parse_bitrate, '"100M"',
          default=0, show=show_bitrate),
    Param("packet_size", "UDP payload bytes (iperf3 -l)", integer(16, 65507), "64", default=1200),
)


@dataclass(frozen=True)
class NetOptions(Options):
    peer: str  # where the iperf3 server runs (loopback: one jitterlab starts on the target)
    port: int
    bitrate_bps: int = key("bitrate")  # 0: unlimited
    packet_bytes: int = key("packet_size")  # UDP payload


def validate_options(options: dict, where: str) -> dict:
    """Check net's options; return them with defaults filled in (bitrate in bits/s)."""
    return parse_options(PARAMS, options, where, "load 'net'")


def preflight(target: Target, options: dict, where: str) -> None:
    """Before the campaign: a `peer` other than loopback must answer an iperf3 UDP test."""
    opts = NetOptions.of(validate_options(options, where))
    if is_loopback(opts.peer):
        return
    reason = peer_problem(target, opts.peer, opts.port, udp=True)
    if reason is not None:
        raise UserError(
            f"{where}: peer {opts.peer}:{opts.port} does not answer iperf3 from target "
            f"{target.name!r} ({reason}); start `iperf3 -s -p {opts.port}` on the peer, or "
            'remove the option \'peer\' to flood the loopback interface'
        )


def parse_client(text: str) -> tuple[float, float] | None:
    """(Mbit/s, packets/s) the client sent, from its JSON report (None: no usable report)."""
    data = first_json(text)
    try:
        total = data["end"]["sum"]
        seconds = float(total["seconds"])
        if seconds <= 0 or int(total["packets"]) <= 0:
            return None
        return float(total["bits_per_second"]) / 1e6, int(total["packets"]) / seconds
    except (KeyError, TypeError, ValueError):
        return None


def parse_loss(text: str) -> float | None:
    """Fraction of datagrams lost, from the server's JSON report (None: not reported)."""
    data = first_json(text)
    try:
        total = data["end"]["sum"]
        packets, lost = int(total["packets"]), int(total["lost_packets"])
    except (KeyError, TypeError, ValueError):
        return None
    return lost / packets if packets > 0 else None


def _udp_ports_in_use(target: Target) -> tuple[set[int], set[int]]:
    """(local, remote) ports of the target's UDP sockets, from /proc/net/udp{,6}."""
    text = target.run(["cat", "/proc/net/udp", "/proc/net/udp6"]).stdout
    local, remote = set(), set()
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 2 and ":" in fields[1] and ":" in fields[2]:
            local.add(int(fields[1].rsplit(":", 1)[1], 16))
            remote.add(int(fields[2].rsplit(":", 1)[1], 16))
    return local, remote


class NetLoad:
    """iperf3 UDP client at `bitrate` (0: as fast as it can) to `peer`, plus its loopback server."""

    def __init__(self) -> None:
        self._client: Tool | None = None
        self._server: Tool | None = None
        self._result: list[Metric] | None = None

    def start(self, ctx: LoadContext) -> None:
        opts = NetOptions.of(validate_options(ctx.options, "load net"))
        self._ctx, self._opts = ctx, opts
        peer, port = opts.peer, opts.port
        ctx.target.run(["mkdir", "-p", ctx.scratch])
        if is_loopback(peer):
            server = server_argv(peer, port)
            self._server = Tool(ctx, "net load: iperf3 server", server, "iperf3-server.json")
            self._server.await_running()
            self._await_listening(port)
        client = ["iperf3", "-c", peer, "-p", str(port), "-u", "-b", str(opts.bitrate_bps),
                  "-l", str(opts.packet_bytes), "-t", str(lifetime_s(ctx)),
                  "--connect-timeout", str(CONNECT_TIMEOUT_MS), "--json"]
        try:
            self._client = Tool(ctx, "net load: iperf3 client", client, "iperf3-client.json")
            self._await_sending(port)
        except BaseException:
            self._stop_all()
            raise

    def _await_listening(self, port: int) -> None:
        """iperf3 says nothing in --json mode until a test ends: watch its TCP control port."""
        if not await_listening(self._ctx.target, port, self._server.alive_or_fail):
            self._stop_all()
            raise RunFailed(f"net load: the iperf3 server did not listen on port {port} "
                            f"within {START_TIMEOUT_S:g}s; {self._server.log_tail()}")

    def _await_sending(self, port: int) -> None:
        """Return once the client's UDP data socket to the peer's port exists (the test runs)."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            self._alive_or_fail()
            if port in _udp_ports_in_use(self._ctx.target)[1]:
                self._client.check()  # starts the CPU-time bookkeeping
                return
            if time.monotonic() > deadline:
                raise RunFailed(f"net load: iperf3 did not start sending to "
                                f"{self._opts.peer}:{port} within {START_TIMEOUT_S:g}s")
            time.sleep(0.02)

    def _alive_or_fail(self) -> None:
        for tool in (self._client, self._server):
            if tool is None:
                continue
            rc = tool.proc.poll()
            if rc is not None:
                error = json_error(tool.read(tool.log))
                why = f"iperf3 says: {error}" if error else tool.log_tail()
                raise RunFailed(f"{tool.label} is no longer running ({describe_exit(rc)}); {why}")

    def check(self) -> None:
        """Client and server alive, none stopped, the client using CPU time (it sends)."""
        self._alive_or_fail()
        self._client.check()
        if self._server is not None:
            self._server.check(idle_after_s=float("inf"))  # the receiver may be starved: fine

    def stop(self) -> list[Metric]:
        """SIGINT the client (it writes its report), let the one-off server end; read both."""
        if self._result is not None or self._client is None:
            return self._result or []
        rc = self._client.finish(signal.SIGINT)
        server_text = ""
        if self._server is not None:
            with contextlib.suppress(CommandTimeout):  # it ends by itself once the client goes
                self._server.proc.wait(3.0)
            self._server.finish(signal.SIGINT, 2.0)
            server_text = self._server.read(self._server.log)
        client_text = self._client.read(self._client.log)
        sent = parse_client(client_text)
        if sent is None:
            error = json_error(client_text)
            raise RunFailed(
                f"net load: could not read what iperf3 sent from {self._client.log} "
                f"(iperf3 {describe_exit(rc)}"
                + (f", it says: {error})" if error else f"); {self._client.log_tail()}")
            )
        mbit_per_s, packets_per_s = sent
        self._result = [
            Metric("load_net_mbit_per_s", mbit_per_s, "Mbit/s"),
            Metric("load_net_packets_per_s", packets_per_s, "packets/s"),
        ]
        loss = parse_loss(server_text)
        if loss is not None:
            self._result.append(Metric("load_net_loss_fraction", loss, "fraction"))
        return self._result

    def _stop_all(self) -> None:
        for tool in (self._client, self._server):
            if tool is not None:
                tool.proc.stop()


LOADS.add(
    "net",
    "iperf3 UDP flood (loopback server, or a `peer` running iperf3 -s); options: peer, port, "
    "bitrate, packet_size",
    LoadSpec(NetLoad, {"iperf3": "iperf3"}, PARAMS, preflight, record=NetOptions),
)
