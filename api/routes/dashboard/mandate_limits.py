"""A mandate's use limits on its dashboard page (issue 31): the executions left, each bound's use
in its current period (used / max, remaining, the period and when it resets, in UTC) and the
history of its use, read by ``services.limit_views``; rendered by
``dashboard/_mandate_limits.html``."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from api.routes.dashboard.common import when
from core import i18n
from policy.limits import MAX_EXECUTIONS, PERIODS, Bound
from services.limit_views import BoundUse, MandateUse, UseEntry

KIND_WORDS = {"executions": "executions (uses)", "sum": "sum", "rate": "rate (uses per period)"}


def amount(value: Decimal | int | float, unit: str | None = None) -> str:
    """A number as the dashboard writes it (English), with the bound's unit when it has one."""
    written = i18n.number("ENG", value)
    return f"{written} {unit}" if unit else written


def _bound(use: BoundUse) -> dict[str, Any]:
    bound = use.bound
    unit = bound.unit if bound.kind == "sum" else None
    return {
        "name": bound.name,
        "request_bound": bound.name == MAX_EXECUTIONS,
        "kind": KIND_WORDS.get(bound.kind, bound.kind),
        "param": bound.param,
        "words": use.words,
        "description": use.description,
        "used": amount(use.used, unit),
        "max": amount(bound.max, unit),
        "remaining": amount(use.remaining, unit),
        "spent": use.remaining == 0,
        "period": i18n.text("ENG", f"period_{bound.period}")
        if bound.period in PERIODS
        else "the mandate's life",
        "resets": when(use.resets_at) if use.resets_at else "never (counted over the mandate's life)",
    }


def _entry(entry: UseEntry, sums: list[Bound]) -> dict[str, Any]:
    v = entry.verification
    amounts = []
    for bound in sums:
        value = entry.amounts.get(bound.name)
        shown = "—" if value is None else amount(value, bound.unit)  # an em dash: nothing to count
        amounts.append(shown if entry.allowed or value is None else f"{shown} (not counted)")
    return {
        "id": v.id,
        "at": when(v.created_at),
        "allowed": entry.allowed,
        "verifier": entry.verifier,
        "amounts": amounts,
        "short": ", ".join(entry.short),
    }


def use_section(use: MandateUse | None) -> dict[str, Any] | None:
    """What the page shows of a mandate's use; None for a credential that is not a mandate."""
    if use is None:
        return None
    sums = use.sums
    return {
        "executions_remaining": use.executions_remaining,
        "bounds": [_bound(b) for b in use.bounds],
        "sums": [{"name": b.name, "param": b.param} for b in sums],
        "history": [_entry(e, sums) for e in use.history],
        "history_total": use.history_total,
        "now": when(use.now),
    }
