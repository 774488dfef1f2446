"""Store specs that are URLs: whether a text looks like one (then it is never taken as a directory
name: a mistyped database URL must not become ./PostgreSQL:/...), what makes one unusable whatever
the server does (a port out of range, a broken %-escape), and how one is shown to people (never with
its password: neither user:password@ nor ?password=)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

from jitterlab.model.errors import shown

# scheme ":" "/": what a URL looks like; "postgres..." followed by ":" also without a slash
_URL_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/|^(postgres[A-Za-z0-9+.-]*):", re.IGNORECASE)
_NETLOC_PASSWORD = re.compile(r"^([^/]*//[^/@?#]*?:)[^@/?#]*@")
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^&#]*", re.IGNORECASE)
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")
_SECRET_KEYS = ("password", "sslpassword")


def scheme(text: str) -> str | None:
    """The scheme of a text that looks like a URL (`x:/...`, `postgres...:`), else None (a path)."""
    found = _URL_LIKE.match(text)
    return (found.group(1) or found.group(2)) if found else None


def masked(text: str) -> str:
    """The URL as shown in messages: every password replaced by ***."""
    return _QUERY_PASSWORD.sub(r"\1***", _NETLOC_PASSWORD.sub(r"\1***@", text))


def passwords(text: str) -> list[str]:
    """The passwords a URL carries (to take out of a driver's error message, which may quote them)."""
    found = []
    netloc = _NETLOC_PASSWORD.match(text)
    if netloc:
        raw = text[len(netloc.group(1)): netloc.end() - 1]
        found += [raw, unquote(raw)]
    try:
        query = urlsplit(text).query
    except ValueError:
        query = text.partition("?")[2]
    found += [v for k, v in parse_qsl(query, keep_blank_values=True)
              if k.lower() in ("password", "sslpassword")]
    found += [m.group(0).partition("=")[2] for m in _QUERY_PASSWORD.finditer(text)]
    return [p for p in found if p]


def scrubbed(message: str, url: str) -> str:
    """A message (a driver's error) with every password of `url` replaced by ***."""
    for password in sorted(set(passwords(url)), key=len, reverse=True):
        message = message.replace(password, "***")
    return message


def defect(url: str) -> str | None:
    """What makes a URL (scheme://user:password@host:port,.../path?key=value) one that no server
    can answer, naming the part: a port that is no number from 1 to 65535, a % that starts no %XX
    escape. None when there is no such defect. A password is never quoted."""
    rest, _, query = url.partition("://")[2].partition("?")
    authority, _, path = rest.partition("/")
    userinfo, _, hosts = authority.rpartition("@")
    user, _, password = userinfo.partition(":")
    parts: list[tuple[str, str, bool]] = [("the user name", user, False), ("the password", password, True)]
    for host in hosts.split(","):
        name, port = _host_port(host)
        parts.append(("the host", name, False))
        if why := _port_defect(port):
            return why
    parts.append(("the database name", path, False))
    for pair in query.split("&") if query else ():
        key, _, value = pair.partition("=")
        parts += [("a query parameter's name", key, False),
                  (f"the value of {key}", value, key.lower() in _SECRET_KEYS)]
        if key == "port":
            for port in unquote(value).split(","):
                if why := _port_defect(port):
                    return why
    for what, text, secret in parts:
        if _BAD_ESCAPE.search(text):
            which = "" if secret else f" {shown(text, 60)}"
            return f"{what}{which} has a % that starts no %XX escape (write a % as %25)"
    return None


def _host_port(host: str) -> tuple[str, str]:
    if host.startswith("["):  # [::1]:5432
        name, _, after = host.partition("]")
        return name + "]", after.removeprefix(":")
    name, _, port = host.partition(":")
    return name, port


def _port_defect(port: str) -> str | None:
    if not port:
        return None  # the default port
    if not port.isascii() or not port.isdigit():
        return f"the port {shown(port, 40)} is not a number"
    if not 1 <= int(port) <= 65535:
        return f"the port {int(port)} is out of range (1 to 65535)"
    return None
