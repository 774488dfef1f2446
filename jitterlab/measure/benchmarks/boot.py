"""boot: how long the target's last boot took, phase by phase, from `systemd-analyze time`.

Only systemd records these times, so a target whose PID 1 is not systemd (a container, a board
with busybox init) gives status "unavailable" with the reason, not a failure. Phases systemd
did not see (no EFI firmware/loader times, no initrd) are absent, not zero. In a container only
userspace is known and systemd prints no total: the total is then the sum of the phases shown.
"""

from __future__ import annotations

import re

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.model.errors import RunFailed, UserError
from jitterlab.model.records import Metric
from jitterlab.targets.base import CommandTimeout

PHASES = ("firmware", "loader", "kernel", "initrd", "userspace")
# systemd's units; "μs" is its UTF-8 spelling (Greek mu), "us" the ASCII one
_NS = {"y": 31_557_600e9, "month": 2_629_800e9, "w": 604_800e9, "d": 86_400e9, "h": 3_600e9,
       "min": 60e9, "s": 1e9, "ms": 1e6, "us": 1e3, "\u03bcs": 1e3, "\u00b5s": 1e3, "ns": 1.0}
_UNITS = "y|month|w|d|h|min|ms|us|\u03bcs|\u00b5s|ns|s"
_PART = rf"(?:\d+(?:\.\d+)?(?:{_UNITS}))"
_SPAN = rf"(0|{_PART}(?: {_PART})*)"
_PHASE = re.compile(rf"{_SPAN} \(([a-z]+)\)")
_LINE = re.compile(rf"^Startup finished in (.*?\(userspace\))(?: = {_SPAN})?\s*$", re.MULTILINE)


def parse_timespan_ns(text: str) -> int:
    """systemd's format_timespan ("1min 3.277s", "743ms", "0") in ns."""
    parts = re.findall(rf"(\d+(?:\.\d+)?)({_UNITS})", text)
    if text != "0" and " ".join(f"{n}{u}" for n, u in parts) != text:
        raise ValueError(f"not a systemd time span: {text!r}")
    return round(sum(float(n) * _NS[u] for n, u in parts))


def parse_time(text: str) -> dict[str, int]:
    """Phase -> ns (and "total") from `systemd-analyze time` output; RunFailed if it is not one."""
    match = _LINE.search(text)
    if match is None:
        raise RunFailed("systemd-analyze time printed no 'Startup finished in ... (userspace)' line")
    phases, total = match.group(1), match.group(2)
    found = _PHASE.findall(phases)
    if " + ".join(f"{span} ({name})" for span, name in found) != phases:
        raise RunFailed(f"systemd-analyze time: cannot read the phases in {phases!r}")
    names = [name for _, name in found]
    if any(n not in PHASES for n in names) or len(set(names)) != len(names):
        raise RunFailed(f"systemd-analyze time: unexpected phases {names}; known: {', '.join(PHASES)}")
    values = {name: parse_timespan_ns(span) for span, name in found}
    values["total"] = parse_timespan_ns(total) if total else sum(values.values())
    return values


class Boot(BenchmarkBase):
    headline = ("boot_total_ns", "boot_kernel_ns", "boot_userspace_ns")
    metrics = tuple(f"boot_{name}_ns" for name in (*PHASES, "total"))  # parse_time's, as execute names them

    params = ()

    def estimate_s(self, settings, cell) -> float:
        return 1.0

    def label(self, cell) -> str:
        return "boot"

    def check(self, cell, settings, where) -> None:
        if cell.load != "idle":
            raise UserError(
                f'{where}.load: boot reads the times of the last boot, which a load '
                f'cannot change; use load = "idle" for benchmark "boot" (got {cell.load!r})'
            )

    def execute(self, ctx: RunContext) -> Measurement:
        target = ctx.target
        # sd_booted(): systemd is PID 1 exactly when this directory exists
        if not target.run(["test", "-d", "/run/systemd/system"]).ok:
            comm = target.run(["cat", "/proc/1/comm"]).stdout.strip() or "unknown"
            raise RunFailed(
                f"systemd is not running on this target (PID 1 is {comm!r}), so nothing recorded the boot "
                "times that systemd-analyze reads",
                status="unavailable",
            )
        try:
            done = target.run(["systemd-analyze", "time"], timeout_s=30.0)
        except CommandTimeout:
            raise RunFailed("systemd-analyze time did not answer within 30 s", status="timeout") from None
        output = (done.stdout + done.stderr).encode()
        if done.rc == 127:
            raise RunFailed("systemd runs but systemd-analyze is not installed (apt install systemd)",
                            status="unavailable")
        if "Bootup is not yet finished" in done.stderr:
            raise RunFailed(
                "systemd-analyze time: the boot has not finished yet (jobs still queued; see "
                "`systemctl list-jobs`); run the campaign once the target has booted",
                attachments={"systemd-analyze.txt": output},
            )
        if not done.ok:
            last = (done.stderr.strip() or done.stdout.strip() or "(no output)").splitlines()[-1]
            raise RunFailed(f"systemd-analyze time failed (exit status {done.rc}): {last}",
                            attachments={"systemd-analyze.txt": output})
        try:
            values = parse_time(done.stdout)
        except RunFailed as exc:
            raise RunFailed(exc.reason, attachments={"systemd-analyze.txt": output}) from None
        return Measurement(
            metrics=[Metric(f"boot_{name}_ns", float(ns), "ns", "", "lower") for name, ns in values.items()]
        )


BENCHMARKS.add(
    "boot",
    "systemd-analyze time: firmware, loader, kernel, initrd, userspace and total time of the last boot",
    Boot(),
)
