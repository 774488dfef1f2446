"""A QMP monitor for tests: a thread on a unix socket that greets like qemu 7.2, answers
qmp_capabilities and the human monitor's `xp /1wx ADDR` with word(ADDR) in qemu's words, slips
an event in before answers, and can be told never to greet, to close or to fall silent after
some reads."""

from __future__ import annotations

import json
import re
import socket
import threading
from collections.abc import Callable
from pathlib import Path

GREETING = {"QMP": {"version": {"qemu": {"micro": 22, "minor": 2, "major": 7}, "package": "Debian"},
                    "capabilities": ["oob"]}}
EVENT = {"event": "RTC_CHANGE", "data": {"offset": 0}, "timestamp": {"seconds": 1, "microseconds": 2}}
_XP = re.compile(r"^xp /1wx (0x[0-9a-f]+)$")


class FakeQmp:
    def __init__(self, path: Path, word: Callable[[int], int | None] = lambda address: 0, *,
                 greet: bool = True, event_every: int = 0, close_after: int | None = None,
                 mute_after: int | None = None) -> None:
        self.path, self.word, self.greet = path, word, greet
        self.event_every, self.close_after, self.mute_after = event_every, close_after, mute_after
        self.reads = 0
        self.commands: list[str] = []
        self._server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._server.bind(str(path))
        self._server.listen(1)
        self._server.settimeout(0.05)
        self._quit = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def __enter__(self) -> FakeQmp:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._quit.set()
        self._thread.join(5)
        self._server.close()
        self.path.unlink(missing_ok=True)

    def _serve(self) -> None:
        while not self._quit.is_set():
            try:
                conn, _ = self._server.accept()
            except TimeoutError:
                continue
            with conn:
                self._talk(conn)

    def _talk(self, conn: socket.socket) -> None:
        conn.settimeout(0.05)
        if self.greet:
            conn.sendall(json.dumps(GREETING).encode() + b"\n")
        buffer = b""
        while not self._quit.is_set():
            try:
                chunk = conn.recv(4096)
            except TimeoutError:
                continue
            if not chunk:
                return
            buffer += chunk
            while b"\n" in buffer:
                line, buffer = buffer.split(b"\n", 1)
                reply = self._answer(json.loads(line))
                if reply is None:
                    return
                if reply:
                    conn.sendall(reply)

    def _answer(self, request: dict) -> bytes | None:
        command = request.get("execute", "")
        self.commands.append(command)
        if command == "qmp_capabilities":
            return b'{"return": {}}\n'
        xp = _XP.match(request.get("arguments", {}).get("command-line", ""))
        if command != "human-monitor-command" or xp is None:
            error = {"class": "CommandNotFound", "desc": f"The command {command} has not been found"}
            return json.dumps({"error": error}).encode() + b"\n"
        if self.close_after is not None and self.reads >= self.close_after:
            return None
        if self.mute_after is not None and self.reads >= self.mute_after:
            return b""  # the connection stays, the answer never comes
        address = int(xp.group(1), 16)
        value = self.word(address)
        self.reads += 1
        text = (f"{address:016x}: Cannot access memory\r\n" if value is None
                else f"{address:016x}: 0x{value:08x}\r\n")
        event = b""
        if self.event_every and self.reads % self.event_every == 0:
            event = json.dumps(EVENT).encode() + b"\n"
        return event + json.dumps({"return": text}).encode() + b"\n"
