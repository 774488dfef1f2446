"""`jitterlab list`: every registry, with one line of help each and their options, read from the
registries when shown: a plug-in, machine, exporter or backend registered since is in it."""

from __future__ import annotations

import argparse
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from rich.markup import escape
from rich.table import Table

from jitterlab.cli.exits import EXIT_OK
from jitterlab.model.errors import UserError
from jitterlab.model.params import Param
from jitterlab.model.registry import Registry


@dataclass(frozen=True)
class Item:
    """One line of a section, and the lines of its options below it."""

    name: str
    help: str
    heading: str | None = None  # above its options ("options in [pins.gpiod]:"); None: no heading
    options: list[tuple[str, str]] = field(default_factory=list)  # (key, its help)


@dataclass(frozen=True)
class Section:
    title: str
    items: Callable[[], Iterator[Item]]  # imports what it shows only when shown


def _params(params: tuple[Param, ...]) -> list[tuple[str, str]]:
    out = []
    for param in params:
        default = "required" if param.default is None else f"default {_shown_default(param)}"
        out.append((param.name, f"{param.help} ({default}; e.g. {param.example})"))
    return out


def _plugins(kind: str) -> Registry:
    """A registry of plugins.ALL (imported when shown: it registers every plug-in)."""
    from jitterlab.plugins import ALL

    return ALL[kind]


def _benchmarks() -> Iterator[Item]:
    for e in _plugins("benchmarks"):  # its params are the matrix keys of its cells
        yield Item(e.name, e.help, None, _params(e.obj.params))


def _plain(kind: str) -> Callable[[], Iterator[Item]]:
    """A registry of plug-ins shown with their help only."""

    def items() -> Iterator[Item]:
        yield from (Item(e.name, e.help) for e in _plugins(kind))

    return items


def _configured(kind: str) -> Callable[[], Iterator[Item]]:
    """A registry of plug-ins with options in the campaign's [KIND.NAME]."""

    def items() -> Iterator[Item]:
        for e in _plugins(kind):
            options = _params(e.obj.params)
            yield Item(e.name, e.help, f"options in [{kind}.{e.name}]:" if options else None, options)

    return items


def _targets() -> Iterator[Item]:
    from jitterlab.targets.registry import KINDS

    for e in _plugins("targets"):
        options = list(KINDS[e.name].options().items())
        yield Item(e.name, e.help, f'options of a [[target]] with kind = "{e.name}":', options)


def _machines() -> Iterator[Item]:
    for e in _plugins("qemu machines"):
        arch = e.obj.arch
        kernels = ", ".join(f"{flavour} = {package}" for flavour, package in e.obj.kernels.items())
        yield Item(e.name, e.help, None, [("arch", f"{arch.name} ({arch.cpu}; {arch.qemu_system})"),
                                          ("kernel", kernels or "only a kernel file")])


def _units() -> Iterator[Item]:
    for e in _plugins("units"):  # a real-time unit: the unit table of a [[target]] names it
        p = e.obj
        yield Item(e.name, e.help, None, [
            ("loaded as", " or ".join(p.loaders)),
            ("timer", f"{p.timer_hz / 1e6:g} MHz, half periods of {p.min_reload} ticks or more")])


def _exporters() -> Iterator[Item]:
    from jitterlab.report.formats import EXPORTERS

    yield from (Item(e.name, e.help) for e in EXPORTERS)


def _backends() -> Iterator[Item]:
    from jitterlab.store.backends import BACKENDS

    yield from (Item(b.name, f"--results takes {b.form}") for b in BACKENDS)


# in the order `jitterlab list` shows them
SECTIONS: tuple[Section, ...] = (
    Section("benchmarks", _benchmarks),
    Section("impls", _plain("impls")),
    Section("pins", _configured("pins")),
    Section("probes", _configured("probes")),
    Section("loads", _configured("loads")),
    Section("tunings", _plain("tunings")),
    Section("targets", _targets),
    Section("qemu machines", _machines),
    Section("units", _units),
    Section("export formats", _exporters),
    Section("store backends", _backends),
)


class _Help(argparse.RawDescriptionHelpFormatter):
    """`jitterlab list --help` names what every registry holds, read only when help is asked for."""

    def add_text(self, text: str | None) -> None:
        if text is _DESCRIPTION:
            lines = (f"{s.title}: {', '.join(i.name for i in s.items())}" for s in SECTIONS)
            text = "\n".join([_DESCRIPTION, "", *(
                textwrap.fill(line, 78, subsequent_indent="  ", break_on_hyphens=False) for line in lines)])
        super().add_text(text)


_DESCRIPTION = "Every registry of jitterlab, with one line of help each and their options."


def add_parser(sub) -> argparse.ArgumentParser:
    titles = [s.title for s in SECTIONS]
    return sub.add_parser("list", help=f"list {', '.join(titles[:-1])} and {titles[-1]}",
                          description=_DESCRIPTION, formatter_class=_Help)


def run(args: argparse.Namespace) -> int:
    from jitterlab.report.terminal import console

    out = console()  # piped: plain rows at their full width, never wrapped nor padded
    for section in SECTIONS:
        table = Table(title=section.title, title_justify="left", show_header=False, box=None, padding=(0, 2))
        for item in section.items():
            table.add_row(f"[bold]{escape(item.name)}[/]", escape(item.help))
            if item.heading is not None:
                table.add_row("", f"  {escape(item.heading)}")
            for key, text in item.options:
                table.add_row("", f"  [cyan]{escape(key)}[/] — {escape(text)}")
        out.print(table)
        out.print()
    return EXIT_OK


def _shown_default(param) -> str:
    """A Param's default as the user writes it ("1ms"), whatever form the default is given in."""
    try:
        shown = param.show(param.parse(param.default, param.name))
    except (UserError, TypeError, ValueError):
        shown = str(param.default)
    if isinstance(param.default, bool):
        shown = str(param.default).lower()
    return shown if shown != "" else '""'
