"""How every activity of the worker is defined: ``@defn(name=…)``.

The activities are synchronous and run on the worker's thread pool. By default the SDK delivers a
cancel (the workflow no longer wants the result, the start-to-close timeout ran out, the worker is
shutting down) by raising ``CancelledError`` inside the activity's thread, wherever it is: between
sending a statement to PostgreSQL and reading its answer, that loses the write and leaves the
connection unusable. Ours are defined with ``no_thread_cancel_exception``: each finishes what it
is doing (a short transaction, a send bounded by its own timeouts; all are idempotent), and the
cancel is reported once it returns (``tests/durability/test_activity_cancel.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from temporalio import activity

F = TypeVar("F", bound=Callable[..., Any])


def defn(*, name: str) -> Callable[[F], F]:
    """``activity.defn`` under ``name``, never interrupted by a cancel."""
    return activity.defn(name=name, no_thread_cancel_exception=True)
