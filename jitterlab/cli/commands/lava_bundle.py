"""`jitterlab lava-bundle`: what a device without network installs jitterlab from."""

from __future__ import annotations

import argparse
from pathlib import Path

from jitterlab.cli.exits import EXIT_OK


def add_parser(sub) -> argparse.ArgumentParser:
    from jitterlab.execution.bundle import this_device

    here = this_device()
    p = sub.add_parser(
        "lava-bundle", help="write what a device without network installs jitterlab from",
        description="Write into DIR jitterlab's wheel, the wheels of its runtime dependencies for the "
        "device's Python, architecture and glibc, and pip's wheel, fetched here with pip; with "
        "--installed-tree also jitterlab installed from them here for that device, packed as site.tar. "
        "The LAVA test definition (jitterlab/lava/jitterlab.yaml) installs jitterlab from it on the "
        "device with its BUNDLE parameter, without network: it unpacks site.tar where there is one that "
        "fits the device (seconds), else installs the wheels with the bundle's pip (minutes on a slow "
        "CPU). The defaults "
        "describe this machine; give the device's when it differs (Debian 12: --python 3.11 --glibc "
        "2.36).",
        epilog="example: jitterlab lava-bundle bundle --python 3.11 --machine aarch64 --glibc 2.36 "
        "--tar bundle.tar")
    p.add_argument("dir", type=Path, metavar="DIR", help="where the bundle goes (a new or empty directory, "
                   "or a bundle written before, which is replaced)")
    p.add_argument("--python", default=here.python, metavar="X.Y",
                   help=f"the device's Python version (default: this one's, {here.python})")
    p.add_argument("--machine", default=here.machine, metavar="NAME",
                   help=f"the device's architecture as `uname -m` says it (default: {here.machine})")
    p.add_argument("--glibc", default=here.glibc or "2.36", metavar="X.Y",
                   help=f"the device's glibc version (default: this machine's, {here.glibc or 'unknown'})")
    p.add_argument("--source", type=Path, metavar="DIR",
                   help="the jitterlab checkout to build the wheel from (default: the one running)")
    p.add_argument("--installed-tree", action="store_true",
                   help="also pack jitterlab installed for the device (site.tar), which the device only "
                   "unpacks: seconds instead of pip's minutes on a slow CPU, for a bundle about four "
                   "times larger (not compressed: gunzip would cost the device's CPU what pip did)")
    p.add_argument("--tar", type=Path, metavar="FILE",
                   help="also write the bundle as a tar archive (a LAVA job's overlay of format tar)")
    return p


def run(args: argparse.Namespace) -> int:
    import jitterlab
    from jitterlab.execution import bundle
    from jitterlab.report.terminal import console

    dev = bundle.device(args.python, args.machine, args.glibc)
    source = args.source or bundle.source_tree(Path(jitterlab.__file__).resolve().parent)
    done = bundle.build(args.dir, dev, source, args.tar, tree=args.installed_tree)
    tar = f"; as a tar archive: {done.tar}" if done.tar is not None else ""
    tree = (f" and jitterlab installed from them ({bundle.TREE}, {done.tree_bytes / 1e6:.0f} MB)"
            if done.tree_bytes else "")
    console().print(f"{len(done.wheels)} wheels ({done.size_bytes / 1e6:.0f} MB) for Python {dev.python} on "
                    f"{dev.machine} (glibc {dev.glibc}){tree} in {done.directory}{tar}; on the device: "
                    "the LAVA definition's BUNDLE parameter names where they are", highlight=False)
    return EXIT_OK
