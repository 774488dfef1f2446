"""A benchmark's estimate comes from what its runs do: ssh-transfer and tmpfs-write run back to
back for campaign.duration but at least once, and finish the transfer or round under way at the
deadline, so a short duration never makes a run of a large file look free."""

from __future__ import annotations

import pytest

from jitterlab.measure.benchmarks import tmpfs, transfer
from jitterlab.model.fakes import cell
from jitterlab.model.records import RunSettings

S = 1_000_000_000


def test_an_ssh_transfer_run_takes_at_least_one_transfer_and_half_of_the_last():
    bench = transfer.SSHTransfer()
    c = cell("ssh-transfer", {"way": "download", "method": "scp", "size": 100_000_000})
    one_s = 100 / transfer.ASSUMED_MB_PER_S + transfer.TRANSFER_START_S  # 5.3 s
    made_s = 100 / transfer.MAKE_MB_PER_S  # 1 s
    short = RunSettings(duration_ns=S // 10)
    assert bench.estimate_s(short, c) == pytest.approx(0.1 + 0.5 + made_s + (one_s - 0.1) + one_s / 2)
    long = RunSettings(duration_ns=20 * S)
    assert bench.estimate_s(long, c) == pytest.approx(20 + 0.5 + made_s + one_s / 2)


def test_a_tmpfs_write_run_takes_at_least_one_round():
    bench = tmpfs.TmpfsWrite()
    c = cell("tmpfs-write", {"size": 1_000_000_000, "block_size": 1_000_000})
    one_s = 1000 / tmpfs.ASSUMED_MB_PER_S + tmpfs.ROUND_START_S  # 5.05 s
    assert bench.estimate_s(RunSettings(duration_ns=S), c) == pytest.approx(one_s + 0.5 + one_s / 2)
