"""The version editor's form: its fields read into a draft's dict form (what
``services.action_drafts`` checks and ``services.actions`` stores) and a draft written back as the
rows of the form, with each problem next to the field it concerns.

The form is plain HTML, usable without JavaScript: one row per param, rule and use limit
(``e-0-name``, ``u-1-default``, ``r-2-expression``, ``l-0-max``: ``actions_limits``) and one blank
row per list to add another; a row left blank is dropped, so clearing a row removes it. Defaults
and the "Try it" values are typed as text and read by the param's type: a number as JSON writes
it, ``true``/``false``, an array as JSON (``["a", "b"]``); left empty, a value is absent (a
default then applies).

A param's size bounds (``e-0-maxlength``, ``e-0-maxitems``) are typed as digits and read into its
``maxLength`` and ``maxItems``; anything else is passed on as typed, for the params' own check to
name. Left empty, the default applies. A bound typed for a type it does not apply to (a max length
for a number) is ignored, as the page's hint says; with the page's script the field is disabled
then, so it is neither sent nor reached by the Tab key.

Every field is checked where it enters: at most ``MAX_ROWS`` rows a list and a length per field
(the longest expression is the one ``policy.cel`` compiles); names, types and values are then
checked by the same functions publishing uses.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from fastapi import Request

from api.routes.dashboard.actions_limits import LIMIT_FIELDS, MAX_LIMIT_ROWS, SELECTS, limit_item, limit_row
from api.routes.dashboard.common import BUILDERS
from policy.cel import MAX_EXPRESSION_LENGTH
from policy.params import PARAM_TYPES, Param, read_timestamp
from policy.rules import MAX_RULE_NAME_LENGTH
from services import actions
from services.action_drafts import Checked, Problem
from wire.dates import in_utc

ACTION_ROLES = BUILDERS
UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
NUMBER_RE = re.compile(r"[1-9][0-9]{0,5}")
PREFIX = "urn:via:action:"
MAX_ROWS = 50
# what each row holds, with the longest text a field may hold
PARAM_FIELDS = {"name": 100, "type": 20, "description": 500, "maxlength": 12, "maxitems": 12}
# a userParam is read by the subject: its label (English here; other languages, kept from a spec
# file, ride along in "translations") and the unit written after its value (issue 34)
USER_FIELDS = {**PARAM_FIELDS, "default": 1000, "label": 100, "unit": 16, "translations": 8000}
RULE_FIELDS = {"name": MAX_RULE_NAME_LENGTH, "description": 500, "expression": MAX_EXPRESSION_LENGTH}
PARTS = {
    "executionParams": ("e", PARAM_FIELDS),
    "userParams": ("u", USER_FIELDS),
    "rules": ("r", RULE_FIELDS),
    "limits": ("l", LIMIT_FIELDS),
}
MOST_ROWS = {"limits": MAX_LIMIT_ROWS}  # the rows a list may have, where not MAX_ROWS
# a "Try it" value: long enough for an array past the default bounds (100 items of 1,000 characters)
MAX_TRY_VALUE = 200_000
# a bound's form field, the member of a param's dict form it is read into, and the types it applies to
BOUNDS = {
    "maxlength": ("maxLength", tuple(t for t in PARAM_TYPES if Param("_", t).length_limit is not None)),
    "maxitems": ("maxItems", tuple(t for t in PARAM_TYPES if Param("_", t).items_limit is not None)),
}
_DIGITS_RE = re.compile(r"[0-9]+")
_NUMBER_RE = re.compile(r"-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]{1,3})?")
_ROW_FIELD_RE = re.compile(r"([eurl])-([0-9]{1,3})-([a-z]+)")


def key_of(action_id: str) -> str:
    """The part of an action's URN its pages' paths carry: the UUID."""
    return action_id.removeprefix(PREFIX)


def action_id_of(key: str) -> str | None:
    """The action URN of a path's UUID; None when the path holds anything else."""
    return PREFIX + key if UUID_RE.fullmatch(key) else None


def form_value(form: dict[str, str], name: str, limit: int) -> str:
    """A posted field, cut to ``limit`` characters (the checks that follow name what is too long)."""
    return form.get(name, "")[:limit]


async def posted(request: Request) -> dict[str, str]:
    """The posted form's text fields (the last of each name; a file is no field of ours)."""
    form = await request.form()
    return {key: value for key, value in form.items() if isinstance(value, str)}


def value_of(type_: str, text: str) -> Any:
    """A typed text as the JSON value of a param of ``type_``; text that is no such value is passed
    on as it is, for the params' own check to name what it must be."""
    if type_ in ("number", "integer"):
        return json.loads(text.strip()) if _NUMBER_RE.fullmatch(text.strip()) else text
    if type_ == "boolean":
        return {"true": True, "false": False}.get(text.strip(), text)
    if type_.startswith("array<"):
        try:
            return json.loads(text)
        except (ValueError, RecursionError):
            return text
    return text.strip() if type_ == "timestamp" else text


def text_of(param: Param) -> str:
    """A param's default as the editor shows it (the inverse of ``value_of``)."""
    if not param.has_default:
        return ""
    if param.type in ("string", "timestamp"):
        return str(param.default)
    return json.dumps(param.default, ensure_ascii=False)


@dataclass
class Draft:
    """What the editor holds: the rows as typed (kept rows only), the dict form of the draft, where
    each kept row sat in the posted form, the form's own problems, the "Try it" values."""

    rows: dict[str, list[dict[str, str]]]
    raw: dict[str, Any]
    positions: dict[str, list[int]] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)
    tries: dict[str, str] = field(default_factory=dict)


def read_form(form: dict[str, str], name: str, description: str | None) -> Draft:
    """The draft a posted editor form holds, under the action's ``name`` and ``description``."""
    by_row: dict[tuple[str, int], dict[str, str]] = {}
    for key, value in form.items():
        found = _ROW_FIELD_RE.fullmatch(key)
        if found:
            by_row.setdefault((found.group(1), int(found.group(2))), {})[found.group(3)] = value
    draft = Draft(rows={}, raw={"name": name, **({"description": description} if description else {})})
    for part, (prefix, limits) in PARTS.items():
        rows, positions = [], []
        for position in sorted(i for p, i in by_row if p == prefix):
            row = {key: by_row[(prefix, position)].get(key, "") for key in limits}
            if any(value.strip() for key, value in row.items() if key not in ("type", *SELECTS)):
                rows.append(row)
                positions.append(position)
        draft.rows[part], draft.positions[part] = rows, positions
        most = MOST_ROWS.get(part, MAX_ROWS)
        if len(rows) > most:
            draft.problems.append(Problem("action", None, f"{part} has more than {most} rows."))
            rows = rows[:most]
        draft.raw[part] = [_item(part, index, row, limits, draft.problems) for index, row in enumerate(rows)]
    # one character more than a value may hold, for ``too_long`` to name it
    draft.tries = {key: value[: MAX_TRY_VALUE + 1] for key, value in form.items() if key.startswith("try-")}
    return draft


def _item(part: str, index: int, row: dict[str, str], limits: dict[str, int], problems: list[Problem]) -> Any:
    """One row as a param, rule or limit in dict form; a field longer than it may be is a problem."""
    item: dict[str, Any] = {name: row[name][:limit].strip() for name, limit in limits.items()}
    for name, limit in limits.items():
        if len(row[name]) > limit and (part, name) != ("rules", "expression"):
            shown = BOUNDS[name][0] if name in BOUNDS else name
            problems.append(Problem(part, index, f"{shown} is longer than {limit} characters"))
            if name in BOUNDS:
                item[name] = ""  # a bound's first digits are no bound: the one problem is its length
    if part == "limits":
        return limit_item(item)
    if part == "rules":
        # as typed (a compile error's column counts from its start); one character more than a rule
        # may hold is enough for the rules' own check to say it is too long
        item["expression"] = row["expression"][: MAX_EXPRESSION_LENGTH + 1]
    else:
        item["type"] = item["type"] or "string"  # any other type is named by the params' check
        _read_bounds(item)
    if "default" in item:
        text = item.pop("default")
        if text:
            item["default"] = value_of(item["type"], text)
    if not item.get("description"):
        item.pop("description", None)
    if part == "userParams":
        _read_texts(part, index, item, problems)
    return item


def _read_texts(part: str, index: int, item: dict[str, Any], problems: list[Problem]) -> None:
    """A userParam row's label, unit and the other languages' texts as its dict form holds them."""
    label, unit, kept = item.pop("label", ""), item.pop("unit", ""), item.pop("translations", "")
    others: dict[str, Any] = {}
    if kept:
        try:
            others = json.loads(kept)
        except ValueError:
            others = {}
        if not isinstance(others, dict):
            others = {}
    labels = {**(others.get("label") or {}), **({"ENG": label} if label else {})}
    if labels:
        item["label"] = labels
    if unit:
        item["unit"] = unit
    if others.get("descriptions"):
        item["descriptions"] = others["descriptions"]


def _read_bounds(item: dict[str, Any]) -> None:
    """A param row's bound fields as its ``maxLength`` and ``maxItems``: digits as a whole number,
    other text as typed (``parse_params`` names what it must be); empty, or typed for a known type
    the bound does not apply to, left out."""
    for field_name, (key, applies) in BOUNDS.items():
        text = item.pop(field_name)
        if not text or (item["type"] in PARAM_TYPES and item["type"] not in applies):
            continue
        item[key] = int(text) if _DIGITS_RE.fullmatch(text) else text


def rows_of(raw: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """A stored draft's content as the editor's rows."""
    rows: dict[str, list[dict[str, str]]] = {}
    for part, (_, limits) in PARTS.items():
        rows[part] = []
        for item in raw.get(part) or []:
            if part == "limits":
                rows[part].append(limit_row(item))
                continue
            row = {name: _text(item.get(BOUNDS[name][0] if name in BOUNDS else name)) for name in limits}
            if "default" in limits and "default" in item:
                param = Param(item["name"], item["type"], default=item["default"], has_default=True)
                row["default"] = text_of(param)
            if part == "userParams":
                labels = dict(item.get("label") or {})
                row["label"] = str(labels.pop("ENG", ""))
                others = {
                    k: v for k, v in (("label", labels), ("descriptions", item.get("descriptions"))) if v
                }
                row["translations"] = json.dumps(others, ensure_ascii=False) if others else ""
            rows[part].append(row)
    return rows


def _text(value: Any) -> str:
    return "" if value is None else str(value)


def shown_bounds(raw: dict[str, Any]) -> dict[str, list[dict[str, str]]]:
    """What a published version's page says of each param's bounds, by part and row: the declared
    bound, the default's ("1,000 (default)"), or "" where the bound does not apply to its type."""
    shown: dict[str, list[dict[str, str]]] = {}
    for part in ("executionParams", "userParams"):
        shown[part] = []
        for item in raw.get(part) or []:
            param = Param(
                str(item.get("name")),
                str(item.get("type")),
                max_length=item.get("maxLength"),
                max_items=item.get("maxItems"),
            )
            shown[part].append(
                {
                    "maxlength": _bound_text(param.length_limit, param.max_length),
                    "maxitems": _bound_text(param.items_limit, param.max_items),
                }
            )
    return shown


def _bound_text(limit: int | None, declared: int | None) -> str:
    if limit is None:
        return ""
    return f"{limit:,}" if declared is not None else f"{limit:,} (default)"


def said(message: str | list[str]) -> str:
    """A service's refusal as one text (its sentences one after the other)."""
    return message if isinstance(message, str) else " ".join(message)


def placed_problems(problems: list[Problem]) -> tuple[dict[str, list[str]], list[str]]:
    """Problems by the id of the row they concern (``r-0``), and those of the draft as a whole."""
    by_row: dict[str, list[str]] = {}
    general = []
    for problem in problems:
        if problem.part in PARTS and problem.index is not None:
            key = f"{PARTS[problem.part][0]}-{problem.index}"
            by_row.setdefault(key, [])
            if problem.text not in by_row[key]:
                by_row[key].append(problem.text)
        else:
            general.append(problem.text)
    return by_row, general


def check_answer(draft: Draft, checked: Checked) -> dict[str, Any]:
    """The as-you-type check's JSON: problems by the id of the row in the page as it was sent
    (blank rows dropped before checking, so positions are mapped back)."""
    moved = [
        Problem(p.part, draft.positions[p.part][p.index], p.text)
        if p.part in PARTS and p.index is not None and p.index < len(draft.positions[p.part])
        else p
        for p in draft.problems + checked.problems
    ]
    by_row, general = placed_problems(moved)
    return {
        "problems": by_row,
        "general": general,
        "publishable": checked.publishable and not draft.problems,
        "allowsAny": allows_any_of(checked),
    }


def allows_any_of(checked: Checked | None) -> bool:
    """The draft reads, but its mandates would allow any execution (no rules, no limits)."""
    return checked is not None and checked.spec is not None and actions.allows_any(checked.spec)


@dataclass(frozen=True)
class TryInput:
    """One "Try it" field: its form name, the param, the value typed."""

    name: str
    param: Param
    root: str
    value: str


def try_inputs(execution: list[Param], user: list[Param], tries: dict[str, str]) -> list[TryInput]:
    return [
        TryInput(f"try-{prefix}-{p.name}", p, root, tries.get(f"try-{prefix}-{p.name}", ""))
        for prefix, root, params in (("e", "executionParams", execution), ("u", "userParams", user))
        for p in params
    ]


def too_long(inputs: list[TryInput]) -> list[str]:
    """The "Try it" values longer than the form takes: named, rather than cut and tried."""
    return [
        f"{entry.root}.{entry.param.name} is longer than the {MAX_TRY_VALUE:,} characters a value "
        "tried here may have"
        for entry in inputs
        if len(entry.value) > MAX_TRY_VALUE
    ]


def try_values(inputs: list[TryInput]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The typed values of the "Try it" fields (an empty field is absent), per root."""
    values: dict[str, dict[str, Any]] = {"executionParams": {}, "userParams": {}}
    for entry in inputs:
        if entry.value.strip():
            values[entry.root][entry.param.name] = value_of(entry.param.type, entry.value)
    return values["executionParams"], values["userParams"]


TRY_NOW_PROBLEM = "now must be an RFC 3339 timestamp with a time zone (e.g. 2025-01-31T12:00:00Z)"


def try_now(text: str, default: datetime) -> datetime:
    """The moment the rules are tried at: ``default`` (the present) when left empty; ``ValueError``
    with the words to show when the text is no RFC 3339 timestamp, or one its offset takes out of
    the range of dates (``wire.dates``)."""
    if not text.strip():
        return default
    parsed = read_timestamp(text.strip())
    if parsed is None:
        raise ValueError(TRY_NOW_PROBLEM)
    try:
        in_utc(parsed)
    except ValueError as exc:
        raise ValueError(f"now {exc}") from None
    return parsed
