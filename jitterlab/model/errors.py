"""The kinds of trouble: bad input (the user's to fix), a condition of the moment that stops a command
(another jitterlab measures the campaign, the database cannot be reached), and a run that could not
be measured."""

from __future__ import annotations

from dataclasses import dataclass

MAX_SHOWN = 80  # characters of an input echoed back in a one-line error


def shown(value: object, limit: int = MAX_SHOWN) -> str:
    """repr(value) for an error message, cut to `limit` characters: a 30 MB value in a campaign
    file must not become a 30 MB "one-line" error (repr escapes control characters)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[: limit - 1]}… ({len(text)} characters)"


MAX_MESSAGE = 2000  # characters of an error message; a longer one keeps its start and its end


class UserError(Exception):
    """Bad input: printed as one line without a traceback; the CLI exits with status 2.

    The message names where the problem is (file:key, option) and how to fix it. A message that
    echoes a huge input is cut in the middle, keeping where (the start) and the fix (the end).
    """

    def __init__(self, message: object = "", *args: object) -> None:
        if isinstance(message, str) and len(message) > MAX_MESSAGE:
            cut = len(message) - 1500
            message = f"{message[:1000]}… ({cut} characters cut) …{message[-500:]}"
        super().__init__(message, *args)


@dataclass(frozen=True)
class Where:
    """Where an input is: its source (a campaign file; "" at run time, when the options were read
    long ago) and the path of keys in it. Formats itself as errors show it: "campaign.toml:
    matrix.period", "campaign.toml: probes.sigrok", "pins.gpiomem" (no source)."""

    source: str = ""
    keys: tuple[str, ...] = ()

    def key(self, *names: str) -> Where:
        """A key under this one (`matrix` -> `matrix.period`)."""
        return Where(self.source, self.keys + names)

    def at(self, *names: str) -> Where:
        """Another path of keys in the same source (`matrix` -> `probes.sigrok`)."""
        return Where(self.source, names)

    def error(self, message: str) -> UserError:
        """The one-line UserError "<where>: message"."""
        return UserError(f"{self}: {message}")

    def __str__(self) -> str:
        path = ".".join(self.keys)
        return f"{self.source}: {path}" if self.source and path else self.source or path


class RuntimeProblem(UserError):
    """Not bad input but a condition of the moment: the campaign is measured by another jitterlab, a
    run was committed meanwhile by another, the results database cannot be reached or is locked.

    Printed as one line like a UserError (and caught wherever one is), but the CLI exits with
    status 1, not 2: the same command may well work later, and a script should not read it as a
    mistake in how it called jitterlab.
    """


class RunFailed(Exception):
    """One run could not be measured; the run is stored with this reason and the campaign goes on."""

    def __init__(
        self, reason: str, status: str = "failed", attachments: dict[str, bytes] | None = None
    ) -> None:
        super().__init__(reason)
        self.reason = reason
        # "failed" | "timeout" | "unmeasurable" (ran, but nothing usable was observed)
        # | "unavailable" (the benchmark cannot run on this target, e.g. no systemd for boot)
        self.status = status
        # what the run left that explains the failure (a tool's unparsable output): kept with it
        self.attachments = dict(attachments or {})


class TargetLost(RunFailed):
    """The target cannot be reached (or the connection dropped): every run on it fails the same way.

    The runner commits this run and the target's remaining runs as failed with the reason, and goes
    on with the other targets; `run --resume --retry-failed` measures them later.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason, status="failed")
