"""How a command ends: its exit status, and SIGTERM taken like Ctrl-C."""

from __future__ import annotations

import signal
import threading

EXIT_OK = 0
EXIT_FAILED = 1  # some runs failed, something needs fixing (doctor), a row got worse (compare --fail-on)
EXIT_RUNTIME = 1  # a condition of the moment (RuntimeProblem): campaign busy, database unreachable
EXIT_USAGE = 2  # bad input (UserError): the command as typed cannot work
EXIT_INTERRUPTED = 130  # Ctrl-C or SIGTERM


class sigterm_as_interrupt:
    """SIGTERM stops jitterlab like Ctrl-C: processes stopped, committed runs kept, exit 130."""

    def __enter__(self) -> None:
        self._previous = None
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGTERM, signal.default_int_handler)

    def __exit__(self, *exc: object) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGTERM, self._previous)
