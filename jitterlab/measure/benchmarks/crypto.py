"""crypto: bytes per second of one OpenSSL algorithm (`openssl speed -evp`), e.g. AES-GCM or SHA-256.

The machine-readable output (-mr) is parsed: "+H:<block sizes>" then "+F:<n>:<name>:<bytes/s
per size>". -elapsed divides by wall-clock time, not by openssl's own CPU time, so a background
load that takes CPU away shows in the figure (what a service would see). openssl runs whole
seconds (-seconds): a campaign duration that is not a whole number of seconds is rounded up.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from jitterlab.measure.benchmarks.base import BENCHMARKS, BenchmarkBase, Measurement, RunContext
from jitterlab.measure.tools.run import failed, run_tool, whole_seconds
from jitterlab.model.errors import RunFailed
from jitterlab.model.options import Options, key
from jitterlab.model.params import Param, choice, format_size, size
from jitterlab.model.records import Metric, Warning_
from jitterlab.targets.processes import pinned

ALGORITHMS = ("aes-128-gcm", "sha256")
_HEADER = re.compile(r"^\+H:(\d+(?::\d+)*)\s*$", re.MULTILINE)
_RESULT = re.compile(r"^\+F:\d+:([^:\n]+)((?::\d+(?:\.\d+)?)+)\s*$", re.MULTILINE)


def parse_mr(text: str, algorithm: str, block_bytes: int) -> float:
    """Bytes per second of `algorithm` at `block_bytes` from `openssl speed -mr` output."""
    headers = _HEADER.findall(text)
    results = _RESULT.findall(text)
    if len(headers) != 1 or len(results) != 1:
        raise RunFailed(
            f"openssl speed -mr output has {len(headers)} '+H:' and {len(results)} '+F:' lines; "
            "expected one of each"
        )
    sizes = [int(s) for s in headers[0].split(":")]
    name, values = results[0]
    speeds = [float(v) for v in values.strip(":").split(":")]
    if name.lower() != algorithm.lower():
        raise RunFailed(f"openssl speed measured {name!r}, not {algorithm!r}")
    if len(speeds) != len(sizes) or block_bytes not in sizes:
        raise RunFailed(f"openssl speed -mr output: block sizes {sizes} and results {speeds} do not match "
                        f"the {block_bytes} bytes asked for")
    return speeds[sizes.index(block_bytes)]


@dataclass(frozen=True)
class CryptoCell(Options):
    algorithm: str
    block_bytes: int = key("block_size")


class Crypto(BenchmarkBase):
    headline = ("bytes_per_s",)

    params = (
        Param("algorithm", "what openssl speed -evp measures", choice(*ALGORITHMS),
              '["aes-128-gcm", "sha256"]', default="aes-128-gcm"),
        Param("block_size", "bytes per operation (-bytes)", size(1, 1 << 30), '"16k"', default=16384,
              show=format_size),
    )
    record = CryptoCell

    def tools(self, cell) -> dict[str, str]:
        return {"openssl": "openssl"}

    def estimate_s(self, settings, cell) -> float:
        rounded_up_s = whole_seconds(settings.duration_ns) - settings.duration_ns / 1e9
        return super().estimate_s(settings, cell) + rounded_up_s

    def label(self, cell) -> str:
        p = CryptoCell.of_cell(cell)
        return f"crypto {p.algorithm} {format_size(p.block_bytes)} {cell.load}"

    def execute(self, ctx: RunContext) -> Measurement:
        p, settings = CryptoCell.of_cell(ctx.cell), ctx.settings
        algorithm, block = p.algorithm, p.block_bytes
        seconds = whole_seconds(settings.duration_ns)
        argv = [*pinned(ctx.placement.program_cpus), "openssl", "speed", "-mr", "-elapsed",
                "-seconds", str(seconds), "-bytes", str(block), "-evp", algorithm]
        rc, output = run_tool(ctx, argv, "openssl speed", "openssl.log")
        if rc != 0:
            raise failed("openssl speed", rc, output, "openssl.log")
        try:
            bytes_per_s = parse_mr(output.decode(errors="replace"), algorithm, block)
        except RunFailed as exc:
            raise RunFailed(exc.reason, exc.status, {"openssl.log": output}) from None
        warnings = []
        if seconds * 1_000_000_000 != settings.duration_ns:
            warnings.append(
                Warning_(
                    f"openssl speed runs whole seconds: it ran {seconds} s for a campaign.duration of "
                    f"{settings.duration_ns / 1e9:g} s",
                    "give campaign.duration in whole seconds",
                )
            )
        metrics = [Metric("bytes_per_s", bytes_per_s, "bytes/s", "", "higher")]
        return Measurement(metrics=metrics, warnings=warnings)


BENCHMARKS.add(
    "crypto",
    "openssl speed -evp: bytes per second of AES-128-GCM or SHA-256 at one block size",
    Crypto(),
)
