"""A small client of QMP, qemu's machine protocol, on the unix socket an emulated board keeps for
probes: the greeting, capabilities negotiation, commands, and reading a 32-bit word of the board's
physical memory (what a qemu target hands a probe as ExaminesMemory.word_reader).

qemu 7.2 has no QMP command that returns physical memory as data: `pmemsave` writes it to a file,
the human monitor's `xp` (through `human-monitor-command`) returns it as text. Both take qemu's
big lock for each read and ran about as fast on this project's machine (~2,000 reads/s on an idle
`virt` board); `xp` needs no file shared with qemu, so it is the one used. The monitor serves one
client at a time: a second one waits without a greeting.

Every failure is a QmpError (a MemoryUnreadable) with one line that says what happened and what to check.
"""

from __future__ import annotations

import json
import re
import socket
from pathlib import Path

from jitterlab.targets.capabilities import MemoryUnreadable

GREETING_TIMEOUT_S = 5.0
_WORD = re.compile(r"^\s*[0-9a-fA-F]+:\s*0x([0-9a-fA-F]+)\s*$")


class QmpError(MemoryUnreadable):
    """The monitor could not be reached or did not answer; the message is one line."""


class Qmp:
    """One connection to a QMP monitor; connect() before use, close() after (a context manager)."""

    def __init__(self, path: Path, timeout_s: float = GREETING_TIMEOUT_S,
                 answer_timeout_s: float | None = None) -> None:
        self.path = Path(path)
        self.timeout_s = timeout_s  # for the greeting: a monitor another client holds never sends it
        self.answer_timeout_s = answer_timeout_s or timeout_s  # for answers: a slow board's may be long
        self.version = ""  # qemu's version, from the greeting
        self._sock: socket.socket | None = None
        self._buffer = b""

    def __enter__(self) -> Qmp:
        return self.connect()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def connect(self) -> Qmp:
        """Open the socket, read the greeting and leave capabilities negotiation (QmpError if not)."""
        where = f"the QMP monitor at {self.path}"
        if not self.path.exists():
            raise QmpError(f"{where} does not exist: the board is not running (or its qemu was started "
                           "without -qmp)")
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout_s)
        try:
            sock.connect(str(self.path))
        except ConnectionRefusedError:
            sock.close()
            raise QmpError(f"{where} refused the connection: its qemu has ended (the socket is left "
                           "over)") from None
        except OSError as exc:
            sock.close()
            raise QmpError(f"{where} cannot be opened: {exc.strerror or exc}") from None
        self._sock = sock
        try:
            greeting = self._message("greeting")
        except QmpError:
            self.close()
            raise
        if "QMP" not in greeting:
            self.close()
            raise QmpError(f"{where} is not a QMP monitor (it greeted with {_cut(greeting)})")
        version = greeting["QMP"].get("version", {}).get("qemu", {})
        self.version = ".".join(str(version.get(k, "?")) for k in ("major", "minor", "micro"))
        sock.settimeout(self.answer_timeout_s)
        self.execute("qmp_capabilities")
        return self

    def close(self) -> None:
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def execute(self, command: str, arguments: dict | None = None) -> object:
        """Run `command` and return what it returned; QmpError with qemu's own reason if it failed."""
        request = {"execute": command, **({"arguments": arguments} if arguments else {})}
        return self._exchange(json.dumps(request).encode() + b"\n", command)

    def word_reader(self, address: int):
        """A function that reads the 32-bit word at physical `address` each time it is called (the
        request is made once: the caller may poll it as fast as the monitor answers)."""
        request = json.dumps({"execute": "human-monitor-command",
                              "arguments": {"command-line": f"xp /1wx {address:#x}"}}).encode() + b"\n"

        def read() -> int:
            text = self._exchange(request, "xp")
            return parse_word(text, address)

        return read

    def read_word(self, address: int) -> int:
        """The 32-bit word at physical `address` of the board, as qemu sees it now."""
        return self.word_reader(address)()

    def _exchange(self, request: bytes, what: str) -> object:
        if self._sock is None:
            raise QmpError(f"the QMP monitor at {self.path} is not connected")
        try:
            self._sock.sendall(request)
        except OSError as exc:
            raise QmpError(f"the QMP monitor at {self.path} closed the connection ({exc.strerror or exc}): "
                           "the board stopped") from None
        while True:
            reply = self._message(f"answer to {what}")
            if "event" in reply:  # asynchronous events (a reset, the guest's power-off) are no answer
                continue
            if "error" in reply:
                error = reply["error"] if isinstance(reply["error"], dict) else {}
                raise QmpError(f"qemu refused {what}: {error.get('desc', _cut(reply))}")
            if "return" not in reply:
                raise QmpError(f"the QMP monitor at {self.path} answered {what} with {_cut(reply)}")
            return reply["return"]

    def _message(self, what: str) -> dict:
        assert self._sock is not None
        while b"\n" not in self._buffer:
            try:
                chunk = self._sock.recv(65536)
            except TimeoutError:
                why = ("another client holds it (it serves one at a time) or its qemu is stuck"
                       if what == "greeting" else "its qemu is stuck or the board is paused")
                raise QmpError(f"the QMP monitor at {self.path} sent no {what} within "
                               f"{self._sock.gettimeout():g}s: {why}") from None
            except OSError as exc:
                raise QmpError(f"the QMP monitor at {self.path} failed: {exc.strerror or exc}") from None
            if not chunk:
                raise QmpError(f"the QMP monitor at {self.path} closed the connection while waiting for its "
                               f"{what}: the board stopped")
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        try:
            message = json.loads(line)
        except ValueError:
            raise QmpError(f"the QMP monitor at {self.path} sent something that is not JSON: "
                           f"{_cut(line)}") from None
        if not isinstance(message, dict):
            raise QmpError(f"the QMP monitor at {self.path} sent {_cut(message)}")
        return message


class MonitorWord:
    """The word at one physical address, read on a QMP connection of its own (a WordReader)."""

    def __init__(self, qmp: Qmp, address: int) -> None:
        self._qmp = qmp
        self._read = qmp.word_reader(address)

    def __call__(self) -> int:
        return self._read()

    def close(self) -> None:
        self._qmp.close()


def open_word(path: Path, address: int, answer_timeout_s: float | None = None) -> MonitorWord:
    """A reader of the word at physical `address` through the monitor at `path`, connected (QmpError
    if it cannot be); `answer_timeout_s` bounds each answer (a slow board's may be long)."""
    return MonitorWord(Qmp(path, GREETING_TIMEOUT_S, answer_timeout_s).connect(), address)


def parse_word(text: object, address: int) -> int:
    """The value in `xp /1wx`'s answer ("0000000009030010: 0x00000004"); QmpError with qemu's words
    when it could not read there."""
    match = _WORD.match(text) if isinstance(text, str) else None
    if match is None:
        said = text.strip() if isinstance(text, str) else _cut(text)
        raise QmpError(f"qemu could not read physical address {address:#x}: {said or '(nothing)'} (is it "
                       "this board's GPIO block?)")
    return int(match.group(1), 16)


def _cut(value: object, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
