"""RFC 8785 JSON Canonicalization Scheme (JCS), the canonical form eddsa-jcs-2022 hashes.

``canonicalize`` is the reference path: the ``rfc8785`` package, which implements the whole RFC
(ECMAScript number formatting, UTF-16 key order, the minimal escapes). It is what the
``../shared/vectors/jcs`` pairs are checked against.

Because the reference path is pure Python and a VP verification canonicalizes four objects, the
common case takes a fast path through the C JSON encoder. ``json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=False)`` produces exactly the JCS bytes when the value holds
no floats (Python and ECMAScript format them differently), no integer beyond 2^53 (JCS refuses it)
and no object key outside the Basic Multilingual Plane (Python sorts by code point, JCS by UTF-16
code unit; the two orders agree within the BMP). String escaping agrees already: both emit ``\\b
\\t \\n \\f \\r \\" \\\\`` and ``\\u00xx`` (lower-case hex) for the other controls and nothing else.
``canonicalize`` checks those conditions on the encoder's output, instead of walking the value:
the strings are cut out of the text first (one regular expression), so that what is left holds
only the numbers, and a float (a digit followed by ``.``, ``e`` or ``E``) or an integer of 16
digits or more sends the value to ``rfc8785``; so does any character outside the BMP. Cutting the
strings out first matters: the documents we sign are full of timestamps (``06:58:51.123Z``) and
URNs whose text looks like a number, and a check over the whole text sent nearly every one of them
to the slow path. Tests run both paths over the vectors and over thousands of generated values,
and check that a credential, a presentation and an audit record take the fast one.
"""

from __future__ import annotations

import json
import re
from typing import Any

import rfc8785

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class CanonicalizationError(ValueError):
    """The value is not JSON that JCS can canonicalize (a NaN, a lone surrogate, a set...)."""


# A JSON string in the encoder's output (escapes included; possessive, so it never backtracks), and
# what may remain outside strings that only the reference path writes as JCS does: a float (Python
# writes each with a "." or an exponent after a digit) or an integer of 16 digits or more (it may
# exceed 2^53). Outside strings the encoder writes only numbers, punctuation, true, false and null.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*+"')
_FLOAT_OR_LONG = re.compile(r"[0-9][.eE]|[0-9]{16}")
_OUTSIDE_BMP = re.compile(rb"[\xf0-\xf4]")


def canonicalize_reference(value: Any) -> bytes:
    """JCS through the ``rfc8785`` package alone."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalizationError(str(exc)) from exc


def canonicalize(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value."""
    try:
        text = _dumps(value)
    except (TypeError, ValueError, RecursionError):  # a set, a NaN...: the reference decides
        return canonicalize_reference(value)
    if _FLOAT_OR_LONG.search(_STRING.sub("", text)):
        return canonicalize_reference(value)
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate in a string
        raise CanonicalizationError(str(exc)) from exc
    if not data.isascii() and _OUTSIDE_BMP.search(data):
        return canonicalize_reference(value)
    return data
