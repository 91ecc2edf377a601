"""How deep a JSON text nests, measured without parsing it: the limit a JSON body may reach
(``api.limits`` checks every body where it enters; ``wire.version_changes`` checks JSON that an
older version carried inside a string, which that check never saw).

The depth of a value is the number of arrays and objects around its innermost part: ``{}`` and
``[1]`` are 1, ``{"a": [{}]}`` is 3. The check is linear and runs in C for all but malformed or
too-deep texts: strings are blanked out, every other byte except brackets dropped, then innermost
``[]`` pairs removed ``limit`` times; a well-formed text within the limit leaves nothing. Only a
text that leaves something is walked bracket by bracket (it is too deep, or not JSON at all).

A text without a backslash has no escaped quote, so its strings are what lies between its quotes
taken in pairs: ``split`` finds them (10 µs for a 2.7 KB verification body) where the regular
expression, needed only for texts with escapes, took 45 µs. After an unpaired last quote comes a
string the parser never ends: nothing in it is parsed as JSON, and it is dropped here too.
"""

from __future__ import annotations

import re

MAX_JSON_DEPTH = 32
STRING_RE = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
# objects and arrays alike become [ and ]; everything else but brackets is dropped
BRACKETS_ONLY = bytes.maketrans(b"{}", b"[]")
NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def without_strings(body: bytes) -> bytes:
    """``body`` without its JSON strings (quotes included)."""
    if b"\\" in body:  # an escape may hide a quote: the expression reads escapes
        return STRING_RE.sub(b"", body)
    return b"".join(body.split(b'"')[::2])


def json_depth_exceeds(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when the JSON text ``body`` nests arrays and objects more than ``limit`` deep."""
    brackets = without_strings(body).translate(BRACKETS_ONLY, NOT_BRACKETS)
    rest = brackets
    for _ in range(limit):
        if not rest:
            return False
        shorter = rest.replace(b"[]", b"")
        if len(shorter) == len(rest):
            break  # unbalanced: not JSON; measure the opening run below
        rest = shorter
    if not rest:
        return False
    depth = 0
    for byte in brackets:
        depth = depth + 1 if byte == 0x5B else depth - 1
        if depth > limit:
            return True
    return False
