"""The step meter of a rule evaluation (issue 30): a hard limit that CEL itself checks.

A *step* is one node of a rule's parse tree visited by cel-python's evaluator, or one iteration of a
macro (``all``, ``exists``, ``exists_one``, ``map``, ``filter``: each clones the evaluation's
variables), or a share of the work of an operation whose cost grows with its operands (``in`` and
``==`` over a list, ``+`` of two lists or strings, ``contains`` and ``matches`` over a string): one
step per ``ITEMS_PER_STEP`` items or ``CHARS_PER_STEP`` characters. ``policy.cost`` estimates the
same steps before a rule runs; this module counts them while it runs, and stops the evaluation with
``LimitReached`` when its budget is spent. The count is deterministic: the same rule on the same
values takes the same steps on any machine, whatever its load.

``LimitReached`` derives from ``BaseException`` on purpose: cel-python turns ordinary exceptions
raised inside a function into CEL error values, which ``||`` and ``&&`` may then absorb; the end of
the budget must stop the evaluation, not become a value.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sized
from contextlib import contextmanager
from typing import Any

# Calibrated on cel-python 0.5 so that a step is about one node's visit (5 to 10 us on the 2-core
# machine): comparing two numbers through CEL's equality takes 1 to 2 us, so a walk costs a step per
# 4 items; a string counts as one item per 4,096 characters in a walk (comparing strings is a
# memcmp), and a method reading a string (contains, matches, ...) takes a step per 512 characters.
# bench.isolation reports the time per step of the costliest rules beside the budget.
ITEMS_PER_STEP = 4
CHARS_PER_ITEM = 4096
CHARS_PER_STEP = 512
ITERATION = 1  # a macro's iteration, beside the nodes of its body


class LimitReached(BaseException):
    """The evaluation took more steps than its budget."""

    def __init__(self, budget: int) -> None:
        super().__init__(f"took more than {budget:,} steps")
        self.budget = budget


class Meter:
    """The steps left of one evaluation's budget, and those spent."""

    __slots__ = ("_volumes", "budget", "spent")

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self.spent = 0
        # the volume of each list or map measured, by identity: a param's list is walked once per
        # evaluation, not once per macro iteration (the value is kept, so its id is not reused)
        self._volumes: dict[int, tuple[Any, int]] = {}

    def volume(self, value: Any) -> int:
        if not isinstance(value, Mapping | list | tuple):
            return volume(value)
        found = self._volumes.get(id(value))
        if found is None:
            found = self._volumes[id(value)] = (value, volume(value))
        return found[1]

    def charge(self, steps: int) -> None:
        self.spent += steps
        if self.spent > self.budget:
            raise LimitReached(self.budget)


_local = threading.local()


@contextmanager
def metered(budget: int) -> Iterator[Meter]:
    """Count the steps of the evaluations run inside (on this thread) against ``budget``."""
    meter = Meter(budget)
    outer = getattr(_local, "meter", None)
    _local.meter = meter
    try:
        yield meter
    finally:
        _local.meter = outer


def charge(steps: int) -> None:
    """Spend ``steps`` of the current evaluation's budget (nothing when none is metered)."""
    meter: Meter | None = getattr(_local, "meter", None)
    if meter is not None and steps:
        meter.charge(steps)


def volume(value: Any) -> int:
    """Items of a list or map, counting those of nested lists and maps; characters of a string or
    bytes; 1 for anything else. What comparing, testing membership in or copying it touches."""
    if isinstance(value, str | bytes):
        return len(value) // CHARS_PER_ITEM + 1
    if isinstance(value, Mapping):
        return 1 + sum(volume(k) + volume(v) for k, v in value.items())
    if isinstance(value, list | tuple):
        return 1 + sum(volume(v) for v in value)
    return 1


def charge_walk(*values: Any) -> None:
    """Charge the steps of an operation that walks each of ``values``."""
    meter: Meter | None = getattr(_local, "meter", None)
    if meter is not None:
        meter.charge(sum(meter.volume(v) for v in values) // ITEMS_PER_STEP)


def text_work(text: Any) -> int:
    return len(text) // CHARS_PER_STEP if isinstance(text, Sized) else 0
