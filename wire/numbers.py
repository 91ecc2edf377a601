"""Numbers the signed forms can hold: a check of wire values against RFC 8785 (JCS)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import rfc8785

from core.text import quote_input


def _key(key: object) -> str:
    """A member name as a path segment in an error message (a long or odd one quoted and cut)."""
    text = str(key)
    return text if len(text) <= 60 and text.isprintable() and "." not in text else quote_input(text, 60)


def _leaves(value: Any) -> Iterator[tuple[str, Any]]:
    """(path below ``value``, number) for every int and float anywhere in ``value``."""
    stack: list[tuple[str, Any]] = [("", value)]
    while stack:
        path, item = stack.pop()
        if isinstance(item, dict):
            stack.extend((f"{path}.{_key(k)}" if path else _key(k), v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{path}.{i}" if path else str(i), v) for i, v in reversed(list(enumerate(item))))
        elif isinstance(item, int | float) and not isinstance(item, bool):
            yield path, item


def reject_non_jcs(value: Any) -> Any:
    """Refuse numbers the signed forms cannot hold: RFC 8785 (JCS) numbers are IEEE doubles, so an
    integer beyond +-(2^53-1), NaN or an infinity could be stored but never canonicalized, signed
    or issued. rfc8785 itself judges each number; the message names where it sits."""
    problems = []
    for path, number in _leaves(value):
        try:
            rfc8785.dumps(number)
        except rfc8785.IntegerDomainError:
            digits = str(number)
            shown = digits if len(digits) <= 30 else f"{digits[:20]}\u2026 ({len(digits)} digits)"
            problems.append(
                f"{path or 'value'} is {shown}: integers must be within \u00b1(2^53-1) "
                "(9007199254740991), the most RFC 8785 JSON canonicalization holds"
            )
        except rfc8785.CanonicalizationError:
            problems.append(
                f"{path or 'value'} is {number}: not a number RFC 8785 JSON canonicalization can hold"
            )
    if problems:
        raise ValueError("; ".join(problems))
    return value
