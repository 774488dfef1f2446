"""Parallel ssh targets: the same per-target campaign on 1 and on 4 targets, and the ssh overhead.

    python bench/parallel.py [--runs 3] [--duration 1s]

Starts 4 OpenSSH servers on loopback (this machine plays 4 boards), deploys the programs to each
(untimed), then measures the wall time of a campaign on 1 ssh target and on 4 ssh targets at once
(goal: ratio <= 1.3), and the wall time per run on the ssh path vs the local target.

The per-target campaign is the python impl at 10 ms with probe = "self": a program that sleeps
most of the time, so 4 of them share this 2-core VM without starving each other, and the ratio
shows the runner's parallelism, not CPU contention. (4 busy-polling vpin observers would need 4
CPUs: with fewer, the ratio measures the machine, not jitterlab.)

The loopback servers set SHLVL=1 so that bash skips root's ~/.bashrc, which on the development VM
runs `pyenv init` (about 120 ms per command): a target whose shell start-up is heavy pays that for
every command jitterlab sends (about a dozen per run).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from jitterlab.campaign.file import load_campaign
from jitterlab.execution.deploy import deploy
from jitterlab.execution.preflight import open_targets
from jitterlab.execution.runner import Runner
from jitterlab.model.units import parse_duration_ns
from jitterlab.store.catalog import Store
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.registry import TARGETS
from jitterlab.targets.ssh.loopback_sshd import LoopbackSSHD
from jitterlab.targets.ssh.target import SSHTarget

N_TARGETS = 4


def campaign_file(root: Path, name: str, targets: list[str], runs: int, duration: str) -> Path:
    path = root / f"{name}.toml"
    path.write_text(
        f'[campaign]\nname = "{name}"\nrepetitions = {runs}\nduration = "{duration}"\nwarmup = "50ms"\n\n'
        + "".join(targets)
        + '[matrix]\nimpl = ["python"]\nperiod = ["10ms"]\nprobe = "self"\n'
    )
    return path


def run_campaign(path: Path, results: Path) -> tuple[float, float, list[float], int]:
    """Wall time of the whole campaign (connect, preflight, runs), of its connect and preflight,
    each run's wall time, and the number of failed runs."""
    campaign = load_campaign(path)
    store = Store(results)
    t0 = time.monotonic()
    sessions = open_targets(campaign)
    open_s = time.monotonic() - t0
    try:
        runner = Runner(campaign, store)
        runner.execute(sessions, runner.campaign_id())
    finally:
        for session in sessions:
            session.target.close()
    wall_s = time.monotonic() - t0
    runs = store.runs()
    store.close()
    return wall_s, open_s, [r.wall_s for r in runs], sum(r.status != "ok" for r in runs)


def round_trip_s(target, n: int = 15) -> float:
    times = []
    for _ in range(n):
        t0 = time.monotonic()
        target.run(["true"])
        times.append(time.monotonic() - t0)
    return statistics.median(times)


class Counter:
    """Counts the ssh client commands one SSHTarget starts (run, spawn, put, get)."""

    def __init__(self) -> None:
        self.n = 0
        self._real = SSHTarget.ssh_argv

    def __enter__(self) -> Counter:
        counter = self

        def counted(target: SSHTarget, remote: list[str], **kwargs) -> list[str]:
            counter.n += 1
            return counter._real(target, remote, **kwargs)

        SSHTarget.ssh_argv = counted  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        SSHTarget.ssh_argv = self._real  # type: ignore[method-assign]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per target (default 3)")
    parser.add_argument("--duration", default="1s", help='duration of a run (default "1s")')
    args = parser.parse_args()
    duration_s = parse_duration_ns(args.duration, "--duration") / 1e9
    root = Path(tempfile.mkdtemp(prefix="jitterlab-bench-parallel-"))
    servers = [LoopbackSSHD(root / f"sshd{i}").start() for i in range(N_TARGETS)]
    try:
        tables = []
        for i, server in enumerate(servers):
            options = server.options(workdir=str(root / f"board{i}"))
            tables.append(
                f'[[target]]\nname = "board{i}"\nkind = "ssh"\n'
                + "".join(f"{k} = {json.dumps(v)}\n" for k, v in options.items())
                + "\n"
            )
            target = TARGETS.get("ssh", "bench")(f"board{i}", options)
            t0 = time.monotonic()
            deploy(target)
            if i == 0:
                print(f"cold deploy over ssh (one tar stream + make there): {time.monotonic() - t0:.1f} s")
                print(f"one command's round trip over ssh: {1000 * round_trip_s(target):.0f} ms")
            target.close()
        local_dir = root / "local"
        local = LocalTarget(workdir=str(local_dir))
        deploy(local)
        print(f"one command's round trip on the local target: {1000 * round_trip_s(local):.1f} ms")
        local.close()

        print(f"per-target campaign: python impl, 10 ms, probe self, {args.runs} runs of {args.duration}")
        with Counter() as counter:
            one_s, one_open_s, one_runs, failed1 = run_campaign(
                campaign_file(root, "one", tables[:1], args.runs, args.duration), root / "r1"
            )
        four_s, four_open_s, _, failed4 = run_campaign(
            campaign_file(root, "four", tables, args.runs, args.duration), root / "r4"
        )
        local_table = f'[[target]]\nname = "local"\nkind = "local"\nworkdir = "{local_dir}"\n\n'
        _, _, local_runs, failed_local = run_campaign(
            campaign_file(root, "local", [local_table], args.runs, args.duration), root / "rl"
        )
        for label, wall_s, open_s, failed in (
            ("1 ssh target ", one_s, one_open_s, failed1),
            (f"{N_TARGETS} ssh targets", four_s, four_open_s, failed4),
        ):
            print(f"{label}: {wall_s:6.1f} s wall, {open_s:.1f} s of it connect+preflight ({failed} failed)")
        print(f"ratio {N_TARGETS} targets / 1 target: {four_s / one_s:.2f} (goal <= 1.3)")
        ssh_run, local_run = statistics.median(one_runs), statistics.median(local_runs)
        print(
            f"wall time per run ({duration_s:g} s measured): local {local_run:.2f} s, ssh {ssh_run:.2f} s; "
            f"ssh path overhead {ssh_run - local_run:+.2f} s per run "
            f"({counter.n / max(1, len(one_runs)):.0f} ssh commands per run, counting preflight; "
            f"{failed_local} local failures)"
        )
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    main()
