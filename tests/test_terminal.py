"""What reaches the terminal: control characters from outside are escaped wherever they are printed,
and an interrupt at any moment ends with one line and exit 130, never a traceback."""

from __future__ import annotations

import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from rich.table import Table
from rich.text import Text

from jitterlab.analysis.synthetic import square_wave
from jitterlab.cli.main import main
from jitterlab.report.console import SafeConsole, escape_controls
from tests.support import wait_gone

HOSTILE = "cap\x1b]0;pwned\x07\x1b[2J\u202eevil\r"


def test_escape_controls_keeps_text_and_escapes_controls():
    assert escape_controls("plain\ttext\nnext µs") == "plain\ttext\nnext µs"
    assert escape_controls(HOSTILE) == "cap\\x1b]0;pwned\\x07\\x1b[2J\\u202eevil\\x0d"
    assert escape_controls("\x9b1m\x7f") == "\\x9b1m\\x7f"


@pytest.mark.parametrize("terminal", [True, False])
def test_the_console_escapes_strings_markup_tables_and_text_objects(terminal):
    console = SafeConsole(file=io.StringIO(), force_terminal=terminal, width=160, highlight=False)
    table = Table(title=HOSTILE)
    table.add_column(HOSTILE)
    table.add_row(HOSTILE)
    table.add_row(Text(HOSTILE))  # (rich itself drops BEL and CR from a Text)
    console.print(f"[bold]{HOSTILE}[/]")
    console.print(table)
    out = console.file.getvalue()
    # a terminal's styles are ESC sequences too: only those may remain
    assert "\x07" not in out and "\x1b]" not in out and "\x1b[2J" not in out and "\u202e" not in out
    assert "\r" not in out and ("\x1b" not in out or terminal)
    assert out.count("pwned") == 5
    assert out.count("\\x1b]0;pwned") == 5 and out.count("\\x1b[2J\\u202eevil") == 5


def _capture(tmp_path: Path) -> Path:
    t, level = square_wave(1_000_000, 100, jitter_ns=0, seed=1)
    path = tmp_path / f"{HOSTILE}.csv"
    path.write_text("".join(f"{a},{b}\n" for a, b in zip(t, level, strict=True)))
    return path


def test_an_imported_file_name_is_printed_escaped_by_import_and_show(tmp_path, capsys):
    results = str(tmp_path / "r")
    assert main(["import", "edges", str(_capture(tmp_path)), "--period", "1ms", "--results", results]) == 0
    assert main(["show", "--results", results]) == 0
    assert main(["show", "--results", results, "--campaign", HOSTILE]) == 2
    out, err = capsys.readouterr()
    for text in (out, err):
        assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text
    assert "cap\\x1b]0;pwned\\x07" in out.replace("\n", "")
    assert "\\x1b]0;pwned" in err.replace("\n", "")


def test_a_label_with_controls_is_refused(tmp_path, capsys):
    path = tmp_path / "c.toml"
    path.write_text('[campaign]\nname = "t"\nduration = "1s"\n[matrix]\nimpl = "c-fifo"\nperiod = "10ms"\n')
    assert main(["run", str(path), "--dry-run", "--label", f"image={HOSTILE}"]) == 2
    err = capsys.readouterr().err
    assert "--label 'image=cap\\x1b]0;pwned" in err and "\x1b]" not in err


def _start(argv: list[str], cwd: Path) -> subprocess.Popen:
    env = {**os.environ, "COLUMNS": "200"}
    return subprocess.Popen([sys.executable, "-m", "jitterlab.cli", *argv], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupt_during_start_up_is_one_line_and_exit_130(tmp_path, signum):
    # a fresh workdir: start-up builds the programs there, which takes seconds
    workdir = tmp_path / "w"
    path = tmp_path / "c.toml"
    path.write_text(f'[campaign]\nname = "t"\nduration = "1s"\n[[target]]\nname = "local"\nkind = "local"\n'
                    f'workdir = "{workdir}"\n[matrix]\nimpl = "c-fifo"\nperiod = "10ms"\nprobe = "self"\n'
                    'load = "cpu"\n')
    proc = _start(["run", str(path), "--results", str(tmp_path / "r")], tmp_path)
    deadline = time.monotonic() + 60
    while not workdir.exists():  # inside main: the target is being prepared
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read().decode()
        time.sleep(0.01)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err.decode()
    assert "Traceback" not in err.decode() and "KeyboardInterrupt" not in err.decode()
    assert "interrupted" in (out + err).decode()
    assert wait_gone(str(workdir), timeout_s=10) == []
