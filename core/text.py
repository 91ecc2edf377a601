"""Integrator text at our boundaries: what a name may hold, how it is set apart in our messages, and
how much of a bad value an error message quotes back.

- ``unsafe_characters``: the characters a one-line name may not hold: C0 and C1 controls and DEL,
  the Unicode line and paragraph separators (U+2028, U+2029) and the bidirectional overrides,
  embeddings, isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), which
  can break a line or reorder what a reader sees.
- ``one_line``: the same text made safe to show inside one of our own texts (each unsafe
  character replaced, length capped), for use where a message is built, whatever got stored.
- ``quote_input``: a bad value as an error message quotes it, escaped like ``repr`` and cut to
  ``limit`` characters of the input with an ellipsis, so a 10 kB value never comes back whole;
  ``shown`` leaves a short plain token (an id, a contact, a type name) as it is and quotes
  anything else that way.
"""

from __future__ import annotations

import re

UNSAFE_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]")
QUOTE_LIMIT = 100
PLAIN_RE = re.compile(r"[\w@.+:/%-]+", re.ASCII)
ELLIPSIS = "\u2026"


def has_space_or_control(value: str) -> bool:
    """``value`` holds whitespace, a C0 control or DEL: what a URL we check may never hold."""
    return any(ch.isspace() or ord(ch) < 0x20 or ord(ch) == 0x7F for ch in value)


def unsafe_characters(value: str) -> list[str]:
    """The distinct unsafe characters of ``value`` as ``U+XXXX``, in order of appearance."""
    return list(dict.fromkeys(f"U+{ord(c):04X}" for c in UNSAFE_RE.findall(value)))


def one_line(value: str, limit: int) -> str:
    """``value`` with every unsafe character replaced by a space and at most ``limit`` characters
    (the last one an ellipsis when cut)."""
    flat = UNSAFE_RE.sub(" ", value)
    return flat if len(flat) <= limit else flat[: max(limit - 1, 0)] + ELLIPSIS


def quote_input(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``value`` quoted for an error message: at most ``limit`` characters of it, repr-escaped, with
    an ellipsis after the quote when it was longer."""
    text = value if isinstance(value, str) else str(value)
    if len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + ELLIPSIS


def shown(value: object, limit: int = QUOTE_LIMIT) -> str:
    """``value`` as it is when it is a short plain token, else ``quote_input(value, limit)``."""
    text = value if isinstance(value, str) else str(value)
    return text if len(text) <= limit and PLAIN_RE.fullmatch(text) else quote_input(text, limit)
