"""The QMP client against a fake monitor on a unix socket: the greeting and capabilities, words
read with `xp` (events between skipped), and one clear line for each way the monitor fails."""

from __future__ import annotations

import shutil
import socket
import tempfile
import threading
from pathlib import Path

import pytest

from jitterlab.targets.capabilities import MemoryUnreadable
from jitterlab.targets.qmp import Qmp, QmpError, open_word, parse_word
from tests.targets.fake_qmp import FakeQmp

PL061_DATA = 0x09030000 + (0x04 << 2)  # line 2's address-masked data register


@pytest.fixture
def sock_dir():
    """A short directory: a unix socket's path must stay under ~107 bytes."""
    path = Path(tempfile.mkdtemp(prefix="jlq-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


def test_the_client_negotiates_and_reads_words_skipping_events(sock_dir):
    words = {PL061_DATA: 0x4}
    with FakeQmp(sock_dir / "qmp.sock", lambda a: words.get(a, 0), event_every=2) as fake, \
            Qmp(sock_dir / "qmp.sock") as qmp:
        assert qmp.version == "7.2.22"
        read = qmp.word_reader(PL061_DATA)
        assert [read(), read(), read()] == [4, 4, 4]
        words[PL061_DATA] = 0
        assert read() == 0 and qmp.read_word(0x09030400) == 0
        assert fake.commands == ["qmp_capabilities", *["human-monitor-command"] * 5]


def test_a_word_reader_is_a_connection_of_its_own_that_reads_one_address(sock_dir):
    """What a qemu target hands a probe (ExaminesMemory.word_reader): a connected reader, and the
    monitor free for the next client once it is closed."""
    words = {PL061_DATA: 0x4}
    with FakeQmp(sock_dir / "qmp.sock", lambda a: words.get(a, 0)) as fake:
        read = open_word(sock_dir / "qmp.sock", PL061_DATA)
        assert read() == 4
        words[PL061_DATA] = 0
        assert read() == 0
        read.close()
        again = open_word(sock_dir / "qmp.sock", PL061_DATA)  # the monitor serves one client at a time
        assert again() == 0
        again.close()
        assert fake.commands == ["qmp_capabilities", *["human-monitor-command"] * 2, "qmp_capabilities",
                                 "human-monitor-command"]
    with pytest.raises(MemoryUnreadable, match=r"^the QMP monitor at .*/qmp.sock does not exist"):
        open_word(sock_dir / "qmp.sock", PL061_DATA)


def test_a_command_qemu_refuses_is_one_line_with_its_reason(sock_dir):
    refused = r"^qemu refused pmemsave: The command pmemsave has not been found$"
    with FakeQmp(sock_dir / "qmp.sock"), Qmp(sock_dir / "qmp.sock") as qmp, \
            pytest.raises(QmpError, match=refused):
        qmp.execute("pmemsave", {"val": 0, "size": 4, "filename": "/dev/null"})


def test_an_address_qemu_cannot_read_names_it(sock_dir):
    with FakeQmp(sock_dir / "qmp.sock", lambda a: None), Qmp(sock_dir / "qmp.sock") as qmp, \
            pytest.raises(QmpError, match=r"^qemu could not read physical address 0x9030010: "
                          r"0000000009030010: Cannot access memory \(is it this board's GPIO block\?\)$"):
        qmp.read_word(PL061_DATA)
    assert parse_word("0000000009030010: 0x0000000c\r\n", PL061_DATA) == 12
    assert parse_word("09030010: 0xdeadbeef", PL061_DATA) == 0xDEADBEEF


def test_no_socket_means_the_board_is_not_running(sock_dir):
    with pytest.raises(QmpError, match=r"^the QMP monitor at .*/qmp.sock does not exist: the board is not "
                       r"running \(or its qemu was started without -qmp\)$"):
        Qmp(sock_dir / "qmp.sock").connect()


def test_a_socket_left_over_by_a_qemu_that_ended_is_refused(sock_dir):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(sock_dir / "qmp.sock"))
    stale.close()  # the file stays, nobody listens
    with pytest.raises(QmpError, match=r"refused the connection: its qemu has ended \(the socket is left "
                       r"over\)$"):
        Qmp(sock_dir / "qmp.sock").connect()


def test_a_monitor_that_never_greets_times_out_naming_the_likely_cause(sock_dir):
    with FakeQmp(sock_dir / "qmp.sock", greet=False), \
            pytest.raises(QmpError, match=r"sent no greeting within 0.2s: another client holds it "
                          r"\(it serves one at a time\) or its qemu is stuck$"):
        Qmp(sock_dir / "qmp.sock", timeout_s=0.2).connect()


def test_answers_have_a_timeout_of_their_own(sock_dir):
    with FakeQmp(sock_dir / "qmp.sock", mute_after=1), \
            Qmp(sock_dir / "qmp.sock", timeout_s=5, answer_timeout_s=0.2) as qmp:
        assert qmp.read_word(PL061_DATA) == 0
        with pytest.raises(QmpError, match=r"sent no answer to xp within 0.2s: its qemu is stuck or the "
                           r"board is paused$"):
            qmp.read_word(PL061_DATA)


def test_a_board_that_stops_while_read_says_so(sock_dir):
    with FakeQmp(sock_dir / "qmp.sock", close_after=2), Qmp(sock_dir / "qmp.sock") as qmp:
        read = qmp.word_reader(PL061_DATA)
        read(), read()
        with pytest.raises(QmpError, match=r"closed the connection while waiting for its answer to xp: "
                           r"the board stopped$"):
            read()


def test_something_that_is_not_a_monitor_is_refused(sock_dir):
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_dir / "qmp.sock"))
    server.listen(1)

    def talk() -> None:
        conn, _ = server.accept()
        conn.sendall(b'{"hello": 1}\n')
        conn.close()

    thread = threading.Thread(target=talk)
    thread.start()
    try:
        with pytest.raises(QmpError, match=r"is not a QMP monitor \(it greeted with \{'hello': 1\}\)$"):
            Qmp(sock_dir / "qmp.sock", timeout_s=2).connect()
    finally:
        thread.join()
        server.close()
