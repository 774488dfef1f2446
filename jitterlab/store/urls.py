"""Store specs that are URLs: whether a text looks like one (then it is never taken as a directory
name: a mistyped database URL must not become ./PostgreSQL:/...), and how one is shown to people
(never with its password: neither user:password@ nor ?password=)."""

from __future__ import annotations

import re
from urllib.parse import parse_qsl, unquote, urlsplit

# scheme ":" "/": what a URL looks like; "postgres..." followed by ":" also without a slash
_URL_LIKE = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*):/|^(postgres[A-Za-z0-9+.-]*):", re.IGNORECASE)
_NETLOC_PASSWORD = re.compile(r"^([^/]*//[^/@?#]*?:)[^@/?#]*@")
_QUERY_PASSWORD = re.compile(r"([?&](?:ssl)?password=)[^&#]*", re.IGNORECASE)


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
