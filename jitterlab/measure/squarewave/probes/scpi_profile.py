"""Instrument profiles of the scpi probe: data, not code. A profile is a TOML file naming the SCPI
commands that set up a period measurement with statistics on a channel, reset the statistics, and
read them back; jitterlab ships some in scpi_profiles/ and a user gives their own by path.

    description = "..."              # one line for `jitterlab list` and the docs
    idn = "Rohde&Schwarz,RT"         # *IDN? must contain this (case-insensitive)
    error_query = "SYSTem:ERRor?"    # answers "<code>,<text>"; code 0 means no error
    setup = ["MEASurement1:SOURce C{channel}W1", ...]   # {channel} is probes.scpi.channel
    reset = ["MEASurement1:STATistics:RESet"]
    [read]                           # each statistic: a query, and the field of a comma list
    mean = { query = "MEASurement1:RESult:AVG?" }
    count = { query = ":MEASure:RESults?", field = 6 }

mean, min, max and std (periods in seconds) are required; count is optional (a scope that cannot
tell leaves n_periods unavailable).
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

from jitterlab.model.errors import UserError
from jitterlab.model.registry import did_you_mean

REQUIRED = ("mean", "min", "max", "std")
OPTIONAL = ("count",)


@dataclass(frozen=True)
class Read:
    query: str
    field: int = 0


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    idn: str
    error_query: str
    setup: tuple[str, ...]
    reset: tuple[str, ...]
    read: dict[str, Read]

    def commands(self, which: tuple[str, ...], channel: str) -> list[str]:
        return [c.replace("{channel}", channel) for c in which]

    def query(self, statistic: str, channel: str) -> Read | None:
        read = self.read.get(statistic)
        return None if read is None else Read(read.query.replace("{channel}", channel), read.field)


def shipped() -> dict[str, str]:
    """Profile name -> its description, for the profiles that come with jitterlab."""
    folder = resources.files(__package__) / "scpi_profiles"
    out = {}
    for entry in sorted(folder.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            name = entry.name.removesuffix(".toml")
            out[name] = str(tomllib.loads(entry.read_text()).get("description", ""))
    return out


def load_profile(spec: str, where: str) -> Profile:
    """A shipped profile by name ("rs-rto") or a user's profile file by path; UserError if bad."""
    if spec.endswith(".toml") or "/" in spec:
        path = Path(spec).expanduser()
        try:
            text = path.read_text()
        except OSError as exc:
            raise UserError(f"{where}: cannot read profile {spec}: {exc.strerror}; give a shipped profile "
                            f"({', '.join(shipped())}) or the path of a TOML profile") from None
        name = path.stem
    else:
        names = shipped()
        if spec not in names:
            raise UserError(f"{where}: unknown profile {spec!r}; {did_you_mean(spec, list(names))}"
                            f"shipped: {', '.join(names)}, or give the path of a TOML profile")
        text = (resources.files(__package__) / "scpi_profiles" / f"{spec}.toml").read_text()
        name = spec
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{where}: profile {spec}: not valid TOML ({exc})") from None
    return _profile(name, data, f"{where} (profile {spec})")


def _strings(data: dict, key: str, where: str) -> tuple[str, ...]:
    value = data.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise UserError(f"{where}: {key}: expected a list of SCPI commands (strings)")
    return tuple(value)


def _profile(name: str, data: dict, where: str) -> Profile:
    known = {"description", "idn", "error_query", "setup", "reset", "read"}
    for key in data:
        if key not in known:
            raise UserError(f"{where}: unknown key {key!r}; {did_you_mean(key, list(known))}"
                            f"known: {', '.join(sorted(known))}")
    for key in ("idn", "error_query"):
        if not isinstance(data.get(key), str) or not data[key]:
            example = "RIGOL" if key == "idn" else "SYSTem:ERRor?"
            raise UserError(f'{where}: {key}: missing; e.g. {key} = "{example}"')
    table = data.get("read")
    if not isinstance(table, dict):
        raise UserError(f'{where}: [read]: missing; e.g. mean = {{ query = "MEASurement1:RESult:AVG?" }}')
    read: dict[str, Read] = {}
    for stat, entry in table.items():
        if stat not in REQUIRED + OPTIONAL:
            raise UserError(f"{where}: read.{stat}: unknown statistic; "
                            f"known: {', '.join(REQUIRED + OPTIONAL)}")
        if (not isinstance(entry, dict) or not isinstance(entry.get("query"), str)
                or not isinstance(entry.get("field", 0), int) or set(entry) - {"query", "field"}):
            raise UserError(f'{where}: read.{stat}: expected {{ query = "...", field = N }} (field optional)')
        read[stat] = Read(entry["query"], int(entry.get("field", 0)))
    missing = [s for s in REQUIRED if s not in read]
    if missing:
        raise UserError(f"{where}: read: missing {', '.join(missing)}; each needs a query")
    return Profile(name, str(data.get("description", "")), data["idn"], data["error_query"],
                   _strings(data, "setup", where), _strings(data, "reset", where), read)
