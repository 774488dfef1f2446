"""The hardware of one farm board, emulated for the tests of the farm path: a power switch, a serial
line and the board (jitterlab's emulated arm64 board, jitterlab/targets/qemu/labgrid_board.py), nothing more.
It is no stand-in for labgrid: the coordinator, the exporter, the place and every driver are
labgrid's own; this plays the parts a lab buys.

- the power switch speaks labgrid's `simplerest` power protocol over HTTP on loopback
  (GET /relay/0/1 powers the board on, /relay/0/0 off, /relay/0 says "1" or "0"): powering on
  starts qemu with the board's storage (a file: what the farm's image writer writes), off stops it;
- the serial line is a TCP port (a raw NetworkSerialPort, as ser2net would offer the board's UART)
  joined to the board's UART while the board is powered (qemu's serial, a unix socket it connects
  to); what the UART sends while nobody listens is lost, as on a real line.

    python -m tests.targets.emulated_farm_board CONFIG.json   # until SIGTERM
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


class Board:
    def __init__(self, config: dict) -> None:
        self.argv = config["qemu_argv"]
        self.log = Path(config["log"])
        self.qemu: subprocess.Popen | None = None
        self.lock = threading.Lock()

    def power(self, on: bool) -> None:
        with self.lock:
            if on and (self.qemu is None or self.qemu.poll() is not None):
                with open(self.log, "ab") as out:
                    out.write(b"power on\n")
                    self.qemu = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=out)
            elif not on and self.qemu is not None:
                self.qemu.terminate()
                self.qemu.wait(20)
                self.qemu = None
                with open(self.log, "ab") as out:
                    out.write(b"power off\n")

    def is_on(self) -> bool:
        return self.qemu is not None and self.qemu.poll() is None


def switch(board: Board, port: int) -> ThreadingHTTPServer:
    class Relay(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            parts = self.path.strip("/").split("/")
            if parts[:2] != ["relay", "0"] or len(parts) > 3 or (len(parts) == 3 and parts[2] not in "01"):
                self.send_error(404)
                return
            if len(parts) == 3:
                board.power(parts[2] == "1")
            body = b"1" if board.is_on() else b"0"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", port), Relay)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def serial_line(tcp_port: int, uart: Path) -> None:
    """Join the one TCP client and the board's UART (qemu connects to `uart`), whichever are there."""
    sel = selectors.DefaultSelector()
    listeners = {}
    for family, address in ((socket.AF_INET, ("127.0.0.1", tcp_port)), (socket.AF_UNIX, str(uart))):
        s = socket.socket(family, socket.SOCK_STREAM)
        if family == socket.AF_INET:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(address)
        s.listen(1)
        listeners[s] = "client" if family == socket.AF_INET else "board"
        sel.register(s, selectors.EVENT_READ, "listen")
    ends: dict[str, socket.socket | None] = {"client": None, "board": None}
    while True:
        for key, _ in sel.select():
            sock = key.fileobj
            if key.data == "listen":
                side = listeners[sock]
                conn, _ = sock.accept()
                if ends[side] is not None:
                    sel.unregister(ends[side])
                    ends[side].close()
                ends[side] = conn
                sel.register(conn, selectors.EVENT_READ, side)
                continue
            side, other = key.data, "board" if key.data == "client" else "client"
            data = sock.recv(4096)
            if not data:
                sel.unregister(sock)
                sock.close()
                ends[side] = None
            elif ends[other] is not None:
                ends[other].sendall(data)


def main(config_path: str) -> None:
    config = json.loads(Path(config_path).read_text())
    board = Board(config)
    signal.signal(signal.SIGTERM, lambda *_: (board.power(False), os._exit(0)))
    switch(board, config["power_port"])
    serial_line(config["serial_port"], Path(config["uart"]))


if __name__ == "__main__":
    main(sys.argv[1])
