"""A mandate's use limits as the pages show them (issue 31).

- ``subject_lines``: for the subject's approval page, each limit in words in the page's language
  (``core.i18n``), never a limit's raw name: "At most 5 uses", "At most 3 uses per day (UTC)",
  "At most 500 EUR per calendar month (UTC)", "At most 1,000 EUR in total". The executions bounds
  (an action's ``executions`` limits and the request's ``maxExecutions``) are one line with the
  smallest max, the number of uses the mandate allows. A sum without a unit says what it counts
  with the limit's description ("At most 500 per calendar month (UTC): Invoices paid"), else "in
  total amount"; any limit's description follows its words.
- ``mandate_use``: for the dashboard's mandate page, each bound's use in its current period (UTC
  calendar periods, ``policy.limits``), when that period ends, the executions left, and the
  verifications that used the mandate or were refused for want of room, newest first.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from functools import partial
from typing import Any

from sqlalchemy import Engine

from core import i18n
from policy import limits
from policy.limits import Bound
from services.context import Context
from store import limit_usage
from store.db import run_db, utcnow
from store.tables import Credential, Verification

HISTORY_SHOWN = 50  # the newest uses a mandate's page lists


# --- the subject's page: the limits in words -------------------------------------------------------


def _words(language: str, item: Mapping[str, Any]) -> str:
    t = partial(i18n.text, language)
    most = limits.decimal(item.get("max"))
    n = i18n.number(language, most)
    period_key = item.get("period")
    period = t(f"period_{period_key}") if period_key in limits.PERIODS else t("period_total")
    description, kind, unit = item.get("description"), item.get("kind"), item.get("unit")
    if kind == "executions":
        line = t("limit_uses_one" if i18n.one(language, most) else "limit_uses", n=n)
    elif kind == "rate":
        line = t("limit_rate_one" if i18n.one(language, most) else "limit_rate", n=n, period=period)
    elif unit:
        line = t("limit_sum", amount=n, unit=unit, period=period)
    elif description:
        line = t("limit_sum_bare", amount=n, period=period)
    elif period_key in limits.PERIODS:
        line = t("limit_sum_plain", amount=n, period=period)
    else:
        line = t("limit_sum_plain_total", amount=n)
    return t("limit_described", limit=line, description=description) if description else line


def subject_lines(language: str, shown: Sequence[Mapping[str, Any]]) -> list[str]:
    """The credential's limits (``store.limit_usage.bounds``) in words: first the executions
    bounds as one line (the smallest max), then the others in their order."""
    executions = [item for item in shown if item.get("kind") == "executions"]
    first = [min(executions, key=lambda item: limits.decimal(item.get("max")))] if executions else []
    return [_words(language, item) for item in [*first, *(i for i in shown if i not in executions)]]


# --- the dashboard's mandate page: each bound's use and the history --------------------------------


@dataclass(frozen=True)
class BoundUse:
    """One bound in its current period."""

    bound: Bound
    description: str | None
    words: str  # as the subject read it, in English
    used: Decimal
    remaining: Decimal
    resets_at: datetime | None  # the end of the current period; None: counted over the mandate's life


@dataclass(frozen=True)
class UseEntry:
    """A verification that used the mandate (``allow``) or was refused for want of room."""

    verification: Verification
    verifier: str  # the verifier's DID as its receipt names it, else its organization id
    amounts: dict[str, Decimal | None]  # per sum bound: executionParams[param] (None: not a number)
    short: list[str]  # refused: the bounds that had no room, as its receipt says

    @property
    def allowed(self) -> bool:
        return self.verification.decision == "allow"


@dataclass(frozen=True)
class MandateUse:
    bounds: list[BoundUse]
    executions_remaining: int | None  # the smallest room of the executions bounds; None: none
    history: list[UseEntry]
    history_total: int
    now: datetime

    @property
    def sums(self) -> list[Bound]:
        return [b.bound for b in self.bounds if b.bound.kind == "sum"]


def _amount(value: Any) -> Decimal | None:
    number = isinstance(value, int | float) and not isinstance(value, bool)
    return limits.decimal(value) if number else None


def _entry(v: Verification, sums: list[Bound]) -> UseEntry:
    receipt = v.receipt if isinstance(v.receipt, dict) else {}
    verifier = receipt.get("verifier")
    reported = receipt.get("limits")
    short = [
        str(item.get("name"))
        for item in (reported if isinstance(reported, list) else [])
        if isinstance(item, dict) and item.get("result") == "fail"
    ]
    params = v.execution_params or {}
    return UseEntry(
        v,
        verifier if isinstance(verifier, str) and verifier else v.organization_id,
        {b.name: _amount(params.get(b.param or "")) for b in sums},
        short,
    )


def _bound_uses(cred: Credential, org_id: str, engine: Engine, now: datetime) -> list[BoundUse]:
    out = []
    for bound, description in limit_usage.bounds_of(engine, org_id, cred):
        _, resets, used = limits.used_now(bound, cred.usage, now)
        remaining = bound.room(used)
        item = {**bound.as_json(), "description": description}
        out.append(BoundUse(bound, description, _words("ENG", item), used, remaining, resets))
    return out


def _read(ctx: Context, org_id: str, cred: Credential, now: datetime) -> MandateUse:
    uses = _bound_uses(cred, org_id, ctx.engine, now)
    found: tuple[list[Verification], int] = ([], 0)
    if cred.mandate_id is not None and uses:
        found = limit_usage.use_history(ctx.engine, cred.id, cred.mandate_id, HISTORY_SHOWN)
    left = limits.executions_remaining([u.bound for u in uses], cred.usage, now)
    sums = [u.bound for u in uses if u.bound.kind == "sum"]
    return MandateUse(uses, left, [_entry(v, sums) for v in found[0]], found[1], now)


async def mandate_use(ctx: Context, org_id: str, cred: Credential) -> MandateUse | None:
    """The use of the organization's mandate now; None for a credential that is not a mandate."""
    if cred.resource_type != "POLICY":
        return None
    return await run_db(ctx.engine, _read, ctx, org_id, cred, utcnow())
