"""How labgrid's trouble reaches the user: one line naming the target, with what labgrid logged
gathered for it instead of reaching the terminal."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator

from jitterlab.model.errors import UserError


def where(name: str) -> str:
    return f"target {name!r} (labgrid)"


def require_labgrid(name: str) -> None:
    try:
        import labgrid  # noqa: F401
        from labgrid.remote.generated import labgrid_coordinator_pb2  # noqa: F401
    except ImportError as exc:
        too_old = exc.name and exc.name.startswith("labgrid.")
        what = "is too old (the gRPC coordinator came with 24.0)" if too_old else "is not installed"
        raise UserError(
            f"{where(name)}: the labgrid package {what}; install it with "
            "pip install 'jitterlab[labgrid]' (labgrid 26)"
        ) from None


@contextlib.contextmanager
def collected_logs(*loggers: logging.Logger) -> Iterator[list[str]]:
    """Gather what labgrid logs (for our one-line errors) instead of letting it reach the terminal."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage().strip())

    handler = Collect(logging.WARNING)
    saved = [(lg, lg.propagate) for lg in loggers]
    for lg, _ in saved:
        lg.addHandler(handler)
        if lg is not logging.getLogger():
            lg.propagate = False
    try:
        yield lines
    finally:
        for lg, propagate in saved:
            lg.removeHandler(handler)
            lg.propagate = propagate
