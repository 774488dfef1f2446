"""ssh-transfer: the target's ssh command line turned into scp and sftp ones, a local target
unavailable, and real transfers both ways with both tools through a loopback sshd."""

from __future__ import annotations

from pathlib import Path

import pytest

from jitterlab.cli.main import main
from jitterlab.measure.benchmarks import transfer
from jitterlab.measure.benchmarks.base import Placement, RunContext
from jitterlab.model.errors import RunFailed
from jitterlab.store.catalog import Store
from jitterlab.targets.local import LocalTarget
from jitterlab.targets.ssh.loopback_sshd import available
from tests.support import campaign_from_toml, units_and_directions

# as SSHTarget.ssh_argv and labgrid's SSHDriver (ssh_prefix with -F none) build them
SSH_TARGET = ["ssh", "-T", "-p", "2222", "-o", "BatchMode=yes", "-o", "ControlMaster=auto",
              "-o", "ControlPath=/tmp/jl-ssh-x/cm", "-i", "/home/me/.ssh/id", "-o", "IdentitiesOnly=yes",
              "-l", "root", "--", "10.0.0.5", "true"]
LABGRID = ["ssh", "-x", "-o", "LogLevel=ERROR", "-i", "key", "-o", "PasswordAuthentication=no", "-F", "none",
           "-o", "ControlPath=/tmp/lg/control", "-o", "BatchMode=yes", "-p", "22", "-l", "pi", "--",
           "fe80::1%eth0", "true"]


def test_scp_and_sftp_reach_the_target_as_ssh_does():
    parts = transfer.ssh_parts(SSH_TARGET)
    options = ["BatchMode=yes", "ControlMaster=auto", "ControlPath=/tmp/jl-ssh-x/cm", "IdentitiesOnly=yes"]
    assert parts == transfer.SSHParts(options, None, "/home/me/.ssh/id", "2222", "root", "10.0.0.5")
    common = ["-o", "BatchMode=yes", "-o", "ControlMaster=auto", "-o", "ControlPath=/tmp/jl-ssh-x/cm", "-o",
              "IdentitiesOnly=yes", "-i", "/home/me/.ssh/id", "-P", "2222"]
    assert transfer.transfer_argv("scp", "upload", parts, "/l/f", "/r/f", "b") == [
        "scp", "-q", "-B", *common, "/l/f", "root@10.0.0.5:/r/f"]
    assert transfer.transfer_argv("scp", "download", parts, "/l/f", "/r/f", "b") == [
        "scp", "-q", "-B", *common, "root@10.0.0.5:/r/f", "/l/f"]
    assert transfer.transfer_argv("sftp", "upload", parts, "/l/f", "/r/f", "/b") == [
        "sftp", "-q", "-b", "/b", *common, "root@10.0.0.5"]
    lab = transfer.ssh_parts(LABGRID)
    assert lab.config == "none" and lab.destination() == "pi@[fe80::1%eth0]"
    assert transfer.sftp_batch("download", "/l/f", "/r/f") == 'get "/r/f" "/l/f"\n'


@pytest.mark.parametrize(("argv", "reason"), [
    (["ssh", "-J", "jump", "--", "h", "true"], "ssh option -J jump has no scp/sftp equivalent"),
    (["ssh", "-N", "--", "h", "true"], "cannot pass the target's ssh option '-N'"),
    (["ssh", "-p", "22"], "names no host after --"),
])
def test_what_cannot_be_passed_on_is_said(argv, reason):
    with pytest.raises(RunFailed, match=reason):
        transfer.ssh_parts(argv)
    with pytest.raises(RunFailed, match="cannot be given the path"):
        transfer.sftp_batch("upload", '/a"b', "/r")


def test_rates_are_the_size_over_each_transfer():
    by = {m.name: m.value for m in transfer.rates([0.5, 1.0, 2.0], 10_000_000)}
    assert by == {"transfer_mb_per_s": 10.0, "transfer_min_mb_per_s": 5.0, "transfer_max_mb_per_s": 20.0,
                  "transfers": 3, "transfer_bytes": 10_000_000}


def test_a_local_target_has_no_ssh_link(tmp_path):
    campaign = campaign_from_toml("ssh-transfer", "")
    target = LocalTarget(workdir=str(tmp_path))
    ctx = RunContext(target, campaign.settings, campaign.cells[0], 0, str(tmp_path), tmp_path, "/b",
                     Placement(None, None), True)
    with pytest.raises(RunFailed) as info:
        transfer.SSHTransfer().execute(ctx)
    assert info.value.status == "unavailable" and "ssh://localhost for loopback" in info.value.reason


@pytest.mark.slow
@pytest.mark.skipif(available() is not None, reason=str(available()))
def test_real_transfers_through_a_loopback_sshd(tmp_path, sshd):
    path = tmp_path / "c.toml"
    path.write_text(f"""
[campaign]
name = "transfer"
repetitions = 1
duration = "200ms"
{sshd.toml("board", workdir=str(tmp_path / "remote"))}
[matrix]
benchmark = "ssh-transfer"
way = ["upload", "download"]
method = ["scp", "sftp"]
size = "2M"
""")
    assert main(["run", str(path), "--results", str(tmp_path / "results")]) == 0
    runs = Store(tmp_path / "results", create=False).runs()
    assert sorted((r.param("way"), r.param("method")) for r in runs) == [
        ("download", "scp"), ("download", "sftp"), ("upload", "scp"), ("upload", "sftp")]
    for run in runs:
        assert run.status == "ok", run.error
        assert units_and_directions(run, "transfer_mb_per_s", "transfers") == {
            "transfer_mb_per_s": ("MB/s", "higher"), "transfers": ("count", "none")}
        assert run.metric("transfers", "") >= 1 and run.metric("transfer_bytes", "") == 2 << 20
    assert not list(Path(tmp_path / "remote").rglob("transfer.bin"))  # the run's directory went with it
