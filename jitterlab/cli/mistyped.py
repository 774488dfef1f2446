"""What a mistyped word on the command line is answered with: the closest option or choice, in one
line. argparse (Python 3.11) offers none, reports an unknown option only after the words that
follow it were taken for positionals (`show --lable image=A` complained about the run id
'image=A'), and names the top parser instead of the command. So a command's words are checked for
unknown options before argparse reads them, and argparse's own messages are rewritten here."""

from __future__ import annotations

import argparse
import re
from collections.abc import Mapping, Sequence

from jitterlab.model.errors import shown
from jitterlab.model.registry import did_you_mean, offered

# what argparse reads as a value, not an option: a negative number ("-1", "-.5")
_NEGATIVE = re.compile(r"^-(\d+|\d*\.\d+)$")
# argparse 3.11: "argument --format: invalid choice: 'jsn' (choose from 'csv', 'json')"
_CHOICE = re.compile(r"^(?P<head>argument [^:]+): invalid choice: (?P<value>.*?) "
                     r"\(choose from (?P<choices>.*)\)$")


def options_of(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string a parser takes ("--label", "-o", "--help")."""
    return [s for action in parser._actions for s in action.option_strings]


def _taken(word: str, known: Sequence[str]) -> bool:
    """Whether argparse would read `word` as one of `known`: itself, with "=VALUE", a unique-prefix
    abbreviation of a long option (argparse's allow_abbrev; an ambiguous one it refuses itself), or
    a short option with its value attached ("-oFILE")."""
    name = word.split("=", 1)[0]
    if name in known:
        return True
    if name.startswith("--"):
        return any(k.startswith(name) for k in known if k.startswith("--"))
    return name[:2] in known


def unknown_option(parser: argparse.ArgumentParser, words: Sequence[str],
                   commands: Mapping[str, argparse.ArgumentParser]) -> str | None:
    """The error for the first word of a command's `words` that looks like an option it does not
    take (None when there is none): the closest of its own options, else the commands that take
    it (`commands`: every command's parser by name), else its options nearest to it."""
    known = options_of(parser)
    for word in words:
        if word == "--":  # what follows is positional
            return None
        if len(word) < 2 or not word.startswith("-") or _NEGATIVE.match(word) or " " in word:
            continue
        if _taken(word, known):
            continue
        name = word.split("=", 1)[0]
        head = f"{parser.prog}: no option {shown(name)}"
        close = did_you_mean(name, [k for k in known if k not in ("-h", "--help")])
        if close:
            return f"{head}; {close.strip()} (see {parser.prog} --help)"
        elsewhere = [c for c, p in commands.items() if p is not parser and name in options_of(p)]
        if elsewhere:
            return (f"{head}; {name} is an option of jitterlab {' and jitterlab '.join(elsewhere)} "
                    f"(see {parser.prog} --help)")
        mine = [k for k in known if k.startswith("--") and k != "--help"]
        listing = f"see {parser.prog} --help"
        text = offered(name, mine, listing)
        return f"{head}; its options: {text}" + ("" if text.endswith(")") else f" ({listing})")
    return None


def commands_of(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The parsers of every command under `parser`, by name ("show", "import edges"): those that
    take words of their own, not a command of theirs."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in dict.fromkeys(action.choices.values()):  # an alias names the same parser
                found.update(commands_of(sub) or {sub.prog.partition(" ")[2]: sub})
    return found


def reworded(message: str) -> str:
    """argparse's message with the choice closest to an invalid one: "argument --format: invalid
    choice 'jsn'; did you mean 'json'? (choose from csv, json, ...)"."""
    found = _CHOICE.match(message)
    if not found:
        return message
    value = found["value"].strip("'\"")
    choices = [c.strip().strip("'\"") for c in found["choices"].split(",")]
    return (f"{found['head']}: invalid choice {shown(value)}; {did_you_mean(value, choices)}"
            f"(choose from {', '.join(choices)})")
