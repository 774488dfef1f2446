"""The emulated arm64 boards the labgrid tests boot: jitterlab.targets.qemu.labgrid_board, as
`jitterlab labgrid-board DIR` writes them for a user."""

from jitterlab.targets.qemu.labgrid_board import READY, Board, env_file, image, prepare, qemu_argv, write_lab

__all__ = ["READY", "Board", "env_file", "image", "prepare", "qemu_argv", "write_lab"]
