"""Reading what the wrapped tools print."""

from __future__ import annotations

import json


def first_json(text: str) -> dict | None:
    """The first JSON object in a tool's output (tools print a line or two before it)."""
    start = text.find("{")
    if start < 0:
        return None
    try:
        data, _ = json.JSONDecoder().raw_decode(text[start:])
    except ValueError:
        return None
    return data if isinstance(data, dict) else None
