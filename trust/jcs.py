"""RFC 8785 JSON Canonicalization Scheme (JCS), the canonical form eddsa-jcs-2022 hashes.

``canonicalize`` is the reference path: the ``rfc8785`` package, which implements the whole RFC
(ECMAScript number formatting, UTF-16 key order, the minimal escapes). It is what the
``../shared/vectors/jcs`` pairs are checked against.

Because the reference path is pure Python and a VP verification canonicalizes four objects, the
common case takes a fast path through the C JSON encoder. ``json.dumps(sort_keys=True,
separators=(",", ":"), ensure_ascii=False)`` produces exactly the JCS bytes when the value holds
no floats (Python and ECMAScript format them differently) and no object key outside the Basic
Multilingual Plane (Python sorts by code point, JCS by UTF-16 code unit; the two orders agree
within the BMP). String escaping agrees already: both emit ``\\b \\t \\n \\f \\r \\" \\\\`` and
``\\u00xx`` (lower-case hex) for the other controls and nothing else. ``_plain`` checks those
two conditions; anything else goes to ``rfc8785``. A test runs both paths over the vectors.
"""

from __future__ import annotations

import json
from typing import Any

import rfc8785

_dumps = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode


class CanonicalizationError(ValueError):
    """The value is not JSON that JCS can canonicalize (a NaN, a lone surrogate, a set...)."""


def _plain(value: Any) -> bool:
    """True when the C encoder's sorted output is already the JCS form (see the module doc)."""
    kind = type(value)
    if kind is str or kind is bool or value is None:
        return True
    if kind is int:
        return -(2**53) < value < 2**53  # JCS numbers are IEEE doubles; larger ints go the slow way
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or (key and max(key) > "\uffff") or not _plain(item):
                return False
        return True
    if kind is list:
        return all(_plain(item) for item in value)
    return False  # floats, tuples, subclasses: the reference path decides


def canonicalize_reference(value: Any) -> bytes:
    """JCS through the ``rfc8785`` package alone."""
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, TypeError, ValueError) as exc:
        raise CanonicalizationError(str(exc)) from exc


def canonicalize(value: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 bytes of a JSON value."""
    if _plain(value):
        try:
            return _dumps(value).encode("utf-8")
        except UnicodeEncodeError as exc:  # a lone surrogate in a string
            raise CanonicalizationError(str(exc)) from exc
    return canonicalize_reference(value)
