"""What a text in a body may hold (``core.text``'s one rule, applied where the body is parsed):
names, labels, tags, references, a scope, a reason and every ``userParams`` string on one line; a
description, a document's value and its ``fields`` may break lines. NUL is refused first, with its
own message, in every string (PostgreSQL cannot store it)."""

from __future__ import annotations

from typing import Any

from core.text import checked_text, strings_in, text_problem


def reject_nul(value: Any) -> None:
    """NUL characters are never meaningful in this API, and PostgreSQL cannot store them in text."""
    if isinstance(value, str):
        if "\x00" in value:
            raise ValueError("must not contain NUL characters")
    elif isinstance(value, list):
        for item in value:
            reject_nul(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            reject_nul(key)
            reject_nul(item)


def one_line_text(value: str) -> str:
    """Names, labels, tags, references, a scope and a reason are one line: they end up in our
    messages, pages and signed forms, where a line break, a control character or a bidi override
    could pass for our own text or reorder what a reader sees (``core.text``, the one rule)."""
    reject_nul(value)  # its own message: the decision documented for every string
    return checked_text(value)


def multiline_text(value: str) -> str:
    """A description or a document's value may hold line breaks, and nothing else ``core.text``
    refuses: no other control character, line separator or bidi control."""
    reject_nul(value)
    return checked_text(value, multiline=True)


def _strings_checked(value: Any, multiline: bool) -> Any:
    reject_nul(value)
    problems = [
        f"{path or 'value'} {problem}"
        for path, text in strings_in(value)
        if (problem := text_problem(text, multiline=multiline)) is not None
    ]
    if problems:
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        raise ValueError("; ".join(problems[:5]) + more)
    return value


def one_line_strings(value: Any) -> Any:
    """Every string (and member name) of ``userParams``, at any depth, is one line (``one_line_text``):
    the subject reads each on the approval page, and the mandate signs it."""
    return _strings_checked(value, multiline=False)


def multiline_strings(value: Any) -> Any:
    """Every string (and member name) of a document item's ``fields`` is ``multiline_text``."""
    return _strings_checked(value, multiline=True)
