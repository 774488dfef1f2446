"""A board's device tree as jitterlab gives it to qemu: Debian's, with the machine profile's edits.

qemu's model of a real board differs from the board where Debian's tree describes hardware qemu
does not emulate faithfully (e.g. sabrelite's Cortex-A9 TWD timer, with which every sleep ran 2-2.4x
long). The edits are made with fdtput (device-tree-compiler) to a copy kept beside the kernel, once
per kernel and edit list; the run's record lists them (vm_dt_edits)."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.targets.qemu.machines.profile import DtEdit


def edited(dtb: Path, edits: tuple[DtEdit, ...], entry: Path, where: str) -> Path:
    """`dtb` with `edits` made, as a file in `entry` (made once); `dtb` itself when there are none."""
    if not edits:
        return dtb
    digest = hashlib.sha256(repr(edits).encode() + dtb.read_bytes()).hexdigest()[:12]
    out = entry / f"{dtb.stem}-{digest}.dtb"
    if out.is_file():
        return out
    fdtput = shutil.which("fdtput")
    if fdtput is None:
        raise UserError(f"{where}: editing the board's device tree needs fdtput on this machine "
                        "(apt install device-tree-compiler)")
    partial = out.with_name(f"{out.name}.{os.getpid()}.part")
    shutil.copyfile(dtb, partial)
    for edit in edits:
        # -t s: a string; an empty property (a flag) is written as a list of no numbers
        argv = ([fdtput, "-t", "s", str(partial), edit.node, edit.prop, edit.value] if edit.value
                else [fdtput, "-t", "x", str(partial), edit.node, edit.prop])
        done = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            partial.unlink(missing_ok=True)
            said = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
            raise UserError(f"{where}: cannot set {edit.prop} of {edit.node} in {dtb.name}: {said}; this "
                            "kernel's device tree differs from the one the machine profile knows")
    os.replace(partial, out)
    return out


def describe(edits: tuple[DtEdit, ...]) -> str:
    """The edits for the run's record: "node prop=value (why); ..."."""
    return "; ".join(f"{e.node} {e.prop}{'=' + e.value if e.value else ''} ({e.why})" for e in edits)
