"""The version editor's use limits (issue 31): a limit row of the form (``l-0-name``, ``l-0-kind``,
``l-0-max``, ``l-0-param``, ``l-0-period``, ``l-0-unit``, ``l-0-description``) read into a limit's
dict form, a stored limit written back as a row, and a published limit said in words.

A row is kept when any of its text fields holds something (the kind and the period are selects:
they alone do not make a row). ``max`` is read as a number when it is one as JSON writes it, else
passed on as typed (``userParams.<name>``, or text ``policy.limits`` names as no max). A field typed
for a kind it does not apply to (a param for a rate) is passed on too, for the limits' own check to
say so; with the page's script such a field is disabled, so it is neither sent nor reached by Tab.
"""

from __future__ import annotations

import json
import re
from typing import Any

from policy.limits import MAX_LIMITS

# what a limit row holds, with the longest text each field may hold (a max may name a user param
# of 100 characters: "userParams." and the name)
LIMIT_FIELDS = {
    "name": 100,
    "kind": 20,
    "max": 120,
    "param": 100,
    "period": 10,
    "unit": 16,
    "description": 500,
}
SELECTS = ("kind", "period")  # a select always holds a value: it alone is no row
MAX_LIMIT_ROWS = MAX_LIMITS
# the period select's choices: the value sent and what the option says
PERIOD_CHOICES = (
    ("", "the mandate's life"),
    ("P1D", "a day (UTC)"),
    ("P1W", "a week, from Monday (UTC)"),
    ("P1M", "a calendar month (UTC)"),
)
# the kinds each kind-dependent field applies to (the page's script disables it for the others)
APPLIES = {"param": ("sum",), "unit": ("sum",), "period": ("sum", "rate")}
_NUMBER_RE = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?")
_PER = {
    "P1D": "per day (UTC)",
    "P1W": "per week (UTC, from Monday)",
    "P1M": "per calendar month (UTC)",
}
LIFE = "over the mandate's life"


def limit_item(row: dict[str, str]) -> dict[str, Any]:
    """A kept limit row (each field already cut to its length and stripped) in dict form: empty
    optional fields absent, a number typed as max read as that number."""
    item: dict[str, Any] = {"name": row["name"], "kind": row["kind"]}
    most = row["max"]
    if most:
        item["max"] = json.loads(most) if _NUMBER_RE.fullmatch(most) else most
    for name in ("param", "period", "unit", "description"):
        if row[name]:
            item[name] = row[name]
    return item


def limit_row(item: dict[str, Any]) -> dict[str, str]:
    """A stored limit as the editor's row (the inverse of ``limit_item``)."""
    most = item.get("max")
    return {
        "name": str(item.get("name", "")),
        "kind": str(item.get("kind", "")),
        "max": "" if most is None else most if isinstance(most, str) else json.dumps(most),
        "param": str(item.get("param") or ""),
        "period": str(item.get("period") or ""),
        "unit": str(item.get("unit") or ""),
        "description": str(item.get("description") or ""),
    }


def amount(value: Any) -> str:
    """A max as people read it: a number with thousands separated (1,000; 12.5), a user param's
    reference as it is written."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:,}"


def in_words(item: dict[str, Any]) -> str:
    """What a published limit bounds, in words: "sum of amount at most userParams.monthlyLimit EUR
    per calendar month (UTC)", "at most 5 executions over the mandate's life"."""
    period = item.get("period")
    per = _PER.get(period, f"per {period}") if period else LIFE
    most = amount(item.get("max"))
    if item.get("kind") == "sum":
        unit = f" {item['unit']}" if item.get("unit") else ""
        return f"sum of {item.get('param')} at most {most}{unit} {per}"
    return f"at most {most} executions {per}"


def described(raw: dict[str, Any]) -> list[dict[str, str]]:
    """A published version's limits as its page lists them: name, the words, the description."""
    return [
        {
            "name": str(item.get("name")),
            "words": in_words(item),
            "description": str(item.get("description") or ""),
        }
        for item in raw.get("limits") or []
        if isinstance(item, dict)
    ]
