"""Integrator text at our boundaries: what a text people read or that is signed may hold, how it is
shown when it holds more, how it is set apart in our messages, and how much of a bad value an
error message quotes back. One rule for every surface (the API, the dashboard, the command line;
docs/adr/0002-text-people-read.md):

- ``unsafe_characters``: the characters such a text may not hold: C0 and C1 controls and DEL,
  the Unicode line and paragraph separators (U+2028, U+2029) and the bidirectional overrides,
  embeddings, isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), which
  can break a line or reorder what a reader sees. A text that may hold several lines
  (``multiline=True``: a description, a document's value) may also hold line feeds, alone or after
  a carriage return; never a lone carriage return, a tab or any other of them.
- ``text_problem`` / ``checked_text``: that rule as the words of a refusal, naming what was found;
  ``strings_in`` walks a JSON value (``userParams``) so each string is judged where it sits.
- ``escaped``: a text already stored (or one nobody could refuse, such as the values an agent
  sends at verify) as a page, a PDF or a terminal shows it: each unsafe character as a visible
  ``\\uXXXX`` marker, never raw.
- ``one_line``: the same text made safe to show inside one of our own texts (each unsafe
  character replaced, length capped), for use where a message is built, whatever got stored.
- ``quote_input``: a bad value as an error message quotes it, escaped like ``repr`` and cut to
  ``limit`` characters of the input with an ellipsis, so a 10 kB value never comes back whole;
  ``shown`` leaves a short plain token (an id, a contact, a type name) as it is and quotes
  anything else that way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

# the bidirectional controls: marks, embeddings, overrides and isolates
BIDI = "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
UNSAFE_RE = re.compile(f"[\x00-\x1f\x7f-\x9f\u2028\u2029{BIDI}]")
# the same, less the line feed and a carriage return right before one
MULTILINE_UNSAFE_RE = re.compile(f"[\x00-\x09\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029{BIDI}]|\r(?!\n)")
ONE_LINE_PROBLEM = "must be one line without control, line separator or bidi override characters"
MULTILINE_PROBLEM = (
    "must not hold control characters other than line breaks, nor line separator or bidi override characters"
)
QUOTE_LIMIT = 100
PLAIN_RE = re.compile(r"[\w@.+:/%-]+", re.ASCII)
ELLIPSIS = "\u2026"


def has_space_or_control(value: str) -> bool:
    """``value`` holds whitespace or a character ``unsafe_characters`` names (a control, a line
    separator, a bidi control): what a URL we check may never hold. A URL is shown on pages (the
    webhook's, the settings') as it was given, so a reordering character could disguise it."""
    return UNSAFE_RE.search(value) is not None or any(ch.isspace() for ch in value)


def unsafe_characters(value: str, *, multiline: bool = False) -> list[str]:
    """The distinct unsafe characters of ``value`` as ``U+XXXX``, in order of appearance; with
    ``multiline``, line feeds (and a carriage return before one) are not counted."""
    found = (MULTILINE_UNSAFE_RE if multiline else UNSAFE_RE).findall(value)
    return list(dict.fromkeys(f"U+{ord(c):04X}" for c in found))


def text_problem(value: str, *, multiline: bool = False) -> str | None:
    """Why ``value`` may not be a text people read or that is signed (the words after a field's
    name), or None when it may."""
    found = unsafe_characters(value, multiline=multiline)
    if not found:
        return None
    rule = MULTILINE_PROBLEM if multiline else ONE_LINE_PROBLEM
    more = f" and {len(found) - 5} more" if len(found) > 5 else ""
    return f"{rule} (found {', '.join(found[:5])}{more})"


def checked_text(value: str, *, multiline: bool = False) -> str:
    """``value`` when ``text_problem`` has nothing against it, else ``ValueError`` saying why."""
    problem = text_problem(value, multiline=multiline)
    if problem is not None:
        raise ValueError(problem)
    return value


def strings_in(value: Any, path: str = "") -> Iterator[tuple[str, str]]:
    """(path, text) for every string in a JSON value, member names included (under their own
    path), depth first in document order: ``payees.1`` is the second item of ``payees``. A member
    name that is not plain is quoted in the path (``quote_input``), so a path is safe to show."""
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            name = str(key)
            segment = name if PLAIN_RE.fullmatch(name) and "." not in name else quote_input(name, 60)
            inner = f"{path}.{segment}" if path else segment
            yield inner, name
            yield from strings_in(item, inner)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from strings_in(item, f"{path}.{index}" if path else str(index))


def escaped(text: str, *, keep_lines: bool = False) -> str:
    """``text`` with every unsafe character shown as ``\\uXXXX`` (``keep_lines``: line feeds kept),
    for a page, a PDF or a terminal: what it holds is seen, and nothing is reordered or broken."""
    unsafe = MULTILINE_UNSAFE_RE if keep_lines else UNSAFE_RE
    return unsafe.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


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
