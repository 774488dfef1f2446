"""`jitterlab labgrid-board DIR`: an emulated arm64 board for labgrid, two images and a campaign."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from jitterlab.cli.exits import EXIT_OK


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "labgrid-board",
        help="write an emulated arm64 board, a labgrid env booting it and an image A/B campaign",
        description="Write into DIR what an image campaign through labgrid's QEMUDriver needs: jitterlab's "
        "emulated arm64 board (Debian's arm64 kernel, an initramfs, SSH keys), two system images (B runs "
        "a CPU hog service at SCHED_FIFO, so B is worse), a labgrid environment (env.yaml) whose "
        "QEMUDriver powers the board, reads its console and forwards 127.0.0.1:PORT to its sshd, and a "
        "campaign (ab.toml) that runs as written from DIR. The board's Debian root is built once and "
        "cached (minutes; needs qemu-system-arm, mmdebstrap and e2fsprogs).",
        epilog="example: jitterlab labgrid-board lab && cd lab && jitterlab run ab.toml --results results")
    p.add_argument("directory", type=Path, metavar="DIR", help="where to write the files (made if missing)")
    p.add_argument("--ssh-port", type=int, default=None, metavar="PORT",
                   help="the loopback port forwarded to the board's sshd (default: a free one)")
    return p


def run(args: argparse.Namespace) -> int:
    from jitterlab.model.errors import UserError
    from jitterlab.report.terminal import console
    from jitterlab.targets.qemu.labgrid_board import write_lab
    from jitterlab.targets.ssh.loopback_sshd import free_port

    if args.ssh_port is not None and not 1024 <= args.ssh_port <= 65535:
        raise UserError(f"--ssh-port {args.ssh_port}: give a port from 1024 to 65535")
    directory = args.directory.resolve()
    env, campaign = write_lab(directory, args.ssh_port or free_port())
    out = console()
    out.print(f"{env}: labgrid env, a QEMUDriver board; images image-A.img and image-B.img (a CPU hog)",
              highlight=False, markup=False)
    out.print(f"{campaign}: the image campaign; measure and compare with:", highlight=False, markup=False)
    for line in (f"  cd {shlex.quote(str(directory))} && jitterlab run ab.toml --results results",
                 "  jitterlab compare --results results --baseline image=A --candidate image=B"):
        out.print(line, highlight=False, markup=False)
    return EXIT_OK
