"""The --json output of the rt-tests (cyclictest, ptsematest, sigwaittest, pmqtest), read once for
all of them: bytes in, the document and its per-thread entries out; RunFailed when it is not whole.

The tools share one document shape and its quirks: keys with a colon ("cmdline:"), "return_code",
"num_threads", and the results under "thread" keyed by each thread's (or sender/receiver pair's)
number as a string; an average over no samples is written -nan, which is not JSON and is read as
null. What an entry holds is each tool's own (cyclictest: min/avg/max/cycles/histogram; the IPC
tests: a sender and a receiver), read by its benchmark.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from jitterlab.model.errors import RunFailed

_NAN = re.compile(rb"(?<=:)\s*-?nan\b", re.IGNORECASE)


@dataclass(frozen=True)
class RtOutput:
    """A whole rt-tests document and its "thread" entries in number order."""

    document: dict
    entries: tuple[object, ...]


def read_json(raw: bytes, tool: str, what: str = "thread") -> RtOutput:
    """The output of `tool` --json; `what` names its entries in errors ("thread", "pair")."""
    try:
        data = json.loads(_NAN.sub(b" null", raw))
    except (ValueError, UnicodeDecodeError) as exc:
        raise RunFailed(f"{tool} --json output is not JSON ({exc})") from None
    threads = data.get("thread") if isinstance(data, dict) else None
    if not isinstance(threads, dict) or not threads:
        raise RunFailed(f'{tool} --json output has no "thread" results')
    if data.get("return_code", 0) != 0:
        raise RunFailed(f"{tool} reported return code {data['return_code']} in its --json output")
    if sorted(threads) != sorted(str(i) for i in range(len(threads))):
        raise RunFailed(f"{tool} --json output: {what}s {sorted(threads)} are not numbered "
                        f"0..{len(threads) - 1}")
    if data.get("num_threads", len(threads)) != len(threads):
        raise RunFailed(f"{tool} --json output: {what}s {sorted(threads)} do not match num_threads "
                        f"{data['num_threads']}")
    return RtOutput(data, tuple(threads[str(i)] for i in range(len(threads))))


def average_us(value: object) -> float | None:
    """An entry's "avg" in µs; None for the -nan of a thread without samples. ValueError/TypeError
    when it is no number."""
    return None if value is None else float(value)  # type: ignore[arg-type]
