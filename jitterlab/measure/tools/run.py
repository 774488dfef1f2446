"""Run a wrapped benchmark tool (cyclictest, sysbench, openssl, ...) on the target to completion."""

from __future__ import annotations

from jitterlab.measure.context import RunContext
from jitterlab.model.errors import RunFailed
from jitterlab.targets.processes import describe_exit, run_recorded

# a tool that runs for whole seconds may take up to one more than the campaign's duration
_ROUNDING_S = 1.0


def whole_seconds(duration_ns: int) -> int:
    """Tools that count whole seconds (sysbench --time, openssl -seconds): at least 1, rounded up."""
    return max(1, -(-duration_ns // 1_000_000_000))


def run_tool(ctx: RunContext, argv: list[str], name: str, log_name: str) -> tuple[int, bytes]:
    """Spawn `argv` (recorded, so a killed run's tool is swept) with stdout+stderr into
    `<scratch>/<log_name>`; wait up to duration + campaign.run_timeout; return (rc, output).

    A tool still running then is killed and the run fails with status "timeout", its output
    attached.
    """
    settings = ctx.settings
    timeout_s = (settings.duration_ns + settings.run_timeout_ns) / 1e9 + _ROUNDING_S
    rc = run_recorded(ctx.target, argv, f"{ctx.scratch}/{log_name}", timeout_s=timeout_s, name=name,
                      budget="duration + campaign.run_timeout")
    return rc, fetch(ctx, log_name)


def fetch(ctx: RunContext, name: str) -> bytes:
    """A file of the run's scratch directory on the target (b"" when there is none)."""
    local = ctx.local_dir / name
    try:
        ctx.target.get(f"{ctx.scratch}/{name}", local)
        return local.read_bytes()
    except OSError:
        return b""


def failed(name: str, rc: int, output: bytes, log_name: str) -> RunFailed:
    """The RunFailed for a tool that exited with an error: its last line, its output attached."""
    lines = output.decode(errors="replace").strip().splitlines()
    last = lines[-1] if lines else "(no output)"
    return RunFailed(f"{name} failed ({describe_exit(rc)}): {last}", attachments={log_name: output})
