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
``canonicalize`` checks those conditions on the encoder's output, instead of walking the value.
Outside strings the compact encoder writes a number only right after ``:``, ``,`` or ``[`` and
right before ``,``, ``}`` or ``]``, so a float (Python writes each with a fraction or an
exponent) or an integer of 16 digits or more is found by one regular expression anchored on both
sides; those go to ``rfc8785``, and so does any character outside the BMP. The anchors matter:
the documents we sign are full of text that merely looks like a number (``06:58:51.123Z``, URNs
whose hex starts with a digit and an ``e``), which a check for a digit followed by ``.`` or ``e``
sent to the slow path nearly every time. Text inside a string that does match (``"x:1.5,"``)
costs only the slow path, never a wrong result. Tests run both paths over the vectors and over
thousands of generated values, and check that the documents we sign take the fast one.

That expression looks at every ``:``, ``,`` and ``[``, and took as long as the encoding itself
(21 µs for a 2.5 KB presentation). Most texts are cleared before it by searches that run at C
speed (``_may_hold_float_or_long``, 7 µs): with every digit written as ``0``, a float as Python
writes it holds a fraction or a signed exponent (``.0``, ``e+0`` or ``e-0``, more zeros) followed
by ``,``, ``}`` or ``]``; a long integer sixteen zeros in a row. A text with none of them holds no
float and no long integer; one with any of them is looked at by the expression, as before.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import rfc8785

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class CanonicalizationError(ValueError):
    """The value is not JSON that JCS can canonicalize (a NaN, a lone surrogate, a set...)."""


# A float or a 16-digit-or-longer integer where the compact encoder writes a number (anchored on
# the punctuation around it; possessive, so a near miss never backtracks), or a bare one at the
# start (a scalar value); any character outside the BMP (a key's UTF-16 order may differ), found
# by the lead byte of its 4-byte UTF-8 form.
_FLOAT_OR_LONG = re.compile(
    r"[:,\[]-?(?:[0-9]++(?:\.[0-9]++(?:[eE][-+]?[0-9]++)?+|[eE][-+]?[0-9]++)|[0-9]{16,}+)(?=[,}\]])"
)
_FIRST_FLOAT_OR_LONG = re.compile(r"-?(?:[0-9]++[.eE]|[0-9]{16})")
_OUTSIDE_BMP = re.compile(rb"[\xf0-\xf4]")
# the pre-check's view of the UTF-8 text: each digit a 0; a fraction where the encoder puts one
_AS_ZEROS = bytes.maketrans(b"123456789", b"000000000")
_FRACTION = re.compile(rb"\.0++(?:e[-+]0++)?+[,}\]]")
_EXPONENT = re.compile(rb"e[-+]0++[,}\]]")  # a UUID's "…e-4f5a" is no exponent: no ``,}]`` after it


def _may_hold_float_or_long(data: bytes) -> bool:
    """False only when the compact encoder's ``data`` holds no float and no integer of 16 digits
    or more (module docstring): Python writes every float with a fraction (``1.5``, ``1.5e-07``)
    or a signed exponent (``1e+16``)."""
    zeros = data.translate(_AS_ZEROS)
    return b"0" * 16 in zeros or _FRACTION.search(zeros) is not None or _EXPONENT.search(zeros) is not None


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
    try:
        data = text.encode("utf-8")
    except UnicodeEncodeError as exc:  # a lone surrogate in a string
        raise CanonicalizationError(str(exc)) from exc
    if _FIRST_FLOAT_OR_LONG.match(text) or (_may_hold_float_or_long(data) and _FLOAT_OR_LONG.search(text)):
        return canonicalize_reference(value)
    if not data.isascii() and _OUTSIDE_BMP.search(data):
        return canonicalize_reference(value)
    return data


def canonical_object(members: Mapping[str, bytes]) -> bytes:
    """The JCS bytes of an object whose member values are given already canonical: the same bytes
    as ``canonicalize`` of the object itself, without encoding its values again. A signer that
    hashes a document without its proof and then with it (``store.audit``) encodes each member
    once."""
    # JCS orders by UTF-16 code units (a lone surrogate sorts, then ``canonicalize`` refuses it)
    names = sorted(members, key=lambda name: name.encode("utf-16-be", "surrogatepass"))
    return b"{" + b",".join(canonicalize(name) + b":" + members[name] for name in names) + b"}"
