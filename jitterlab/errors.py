"""The two kinds of trouble: bad input (the user's to fix) and a run that could not be measured."""

from __future__ import annotations


class UserError(Exception):
    """Bad input: printed as one line without a traceback; the CLI exits with status 2.

    The message names where the problem is (file:key, option) and how to fix it.
    """


class RunFailed(Exception):
    """One run could not be measured; the run is stored with this reason and the campaign goes on."""

    def __init__(self, reason: str, status: str = "failed") -> None:
        super().__init__(reason)
        self.reason = reason
        self.status = status  # "failed" | "timeout" | "unmeasurable"
