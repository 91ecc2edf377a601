"""A mandate's use limits as the pages show them (issue 31).

- ``subject_lines``: for the subject's approval page, each limit in words in the page's language
  (``core.i18n``), never a limit's raw name: "At most 5 uses", "At most 3 uses per day (UTC)",
  "At most 500 EUR per calendar month (UTC)", "At most 1,000 EUR in total". The executions bounds
  (an action's ``executions`` limits and the request's ``maxExecutions``) are one line with the
  smallest max, the number of uses the mandate allows. A sum without a unit says what it counts
  with the limit's description ("At most 500 per calendar month (UTC): Invoices paid"), else "in
  total amount"; any limit's description follows its words.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any

from core import i18n
from policy import limits

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
