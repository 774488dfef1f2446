"""Labels (image = "1.10") and the names people type and read back: one printable line each.

A label is KEY = VALUE from [campaign.labels] or --label; compare selects runs by KEY=VALUE, so a
key holds no '='. Control characters (ESC, newline, ...) are refused: names are printed and typed.
"""

from __future__ import annotations

import re

from jitterlab.model.errors import UserError, shown

MAX_NAME = 100  # characters of a campaign name, target name, label key
MAX_LABEL = 200  # characters of a label value
CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")  # and undecodable bytes


def printable(text: str, limit: int, where: str) -> None:
    """A name people type and read back: one line of printable text, at most `limit` characters."""
    if len(text) > limit or CONTROL.search(text):
        raise UserError(f"{where}: expected one line of printable text of at most {limit} characters, "
                        f"got {shown(text)}")


def check_label(key: str, value: str, where: str) -> None:
    """A label is KEY = VALUE of one printable line each; compare selects runs by KEY=VALUE."""
    printable(key, MAX_NAME, f"{where} key")
    if "=" in key or not key.strip() or key != key.strip():
        raise UserError(f"{where}: a label key is a word without '=' or spaces around it (compare selects "
                        f"runs with KEY=VALUE), got {shown(key)}")
    printable(value, MAX_LABEL, where)
    if not value.strip():
        raise UserError(f'{where}: a label has a value, e.g. image = "1.10"; remove the label or give one')
    if value != value.strip():  # compare reads KEY=VALUE without them: the label could not be selected
        raise UserError(f"{where}: a label value has no spaces around it, got {shown(value)}")


def label_pair(text: str, option: str = "--label") -> tuple[str, str]:
    """KEY=VALUE as typed on the command line (--label image=1.11), checked as a label: (key, value).
    Each way it can be wrong is said as it is: no '=', no key, no value."""
    key, sep, value = text.partition("=")
    key, value = key.strip(), value.strip()
    where = f"{option} {shown(text)}"
    if not sep:
        raise UserError(f"{where}: write KEY=VALUE, e.g. {option} image=1.11")
    if not key:
        example = f"image={_word(value, '1.11')}"
        raise UserError(f"{where}: no key before '='; write KEY=VALUE, e.g. {option} {example}")
    if not value:
        example = f"{_word(key, 'image')}=1.11"
        raise UserError(f"{where}: no value after '='; a label has one, e.g. {option} {example}")
    check_label(key, value, where)
    return key, value


def _word(text: str, instead: str) -> str:
    """`text` in an example when it is a plain short word, else `instead`: an example never echoes
    what could not be typed back."""
    return text if re.fullmatch(r"[\w.+-]{1,20}", text, re.ASCII) else instead
