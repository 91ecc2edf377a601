"""The depth of a parsed JSON value, as ``wire.json_depth`` measures its text."""

from __future__ import annotations

from typing import Any


def depth(value: Any) -> int:
    """Arrays and objects around the innermost part of ``value`` (the value itself counts)."""
    if isinstance(value, dict):
        return 1 + max((depth(v) for v in value.values()), default=0)
    if isinstance(value, list):
        return 1 + max((depth(v) for v in value), default=0)
    return 0
