"""A FORM approval filled in by its subject on the approval page (docs/approvals.md): the values
checked against each field's type and bounds, then written into the credential's data items, which
the issued credential signs (``credentialSubject.data``) and ``GET /request`` shows.

A FORM credential's data items are ``{label, type: "FORM:<field type>", value, fields: [field]}``
(``services.approvals``); the value is empty until the subject gives it. Values are given once:
a second submission (another tab) does not change what was stored.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import date
from typing import Any

from core.text import text_problem
from services.context import Context
from services.errors import Conflict
from store import approval_credentials as store
from store.db import run_db
from wire.approvals import MAX_NUMBER, MAX_TEXT_VALUE

FORM_PREFIX = "FORM:"


def form_fields(data: list[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """The field definitions of a FORM credential's data items (none for any other credential)."""
    return [
        item["fields"][0]
        for item in data or ()
        if str(item.get("type", "")).startswith(FORM_PREFIX) and item.get("fields")
    ]


def input_name(credential_id: str, field: Mapping[str, Any]) -> str:
    """The name of a field's input on the approval page."""
    return f"field-{credential_id}-{field['name']}"


def _number(raw: str, field: Mapping[str, Any]) -> int | float | None:
    try:
        value = float(raw)
    except ValueError:
        return None
    low, high = field.get("min", -MAX_NUMBER), field.get("max", MAX_NUMBER)
    if not math.isfinite(value) or not low <= value <= high:
        return None
    return int(value) if value.is_integer() else value


def _value(raw: str | None, field: Mapping[str, Any]) -> tuple[Any, bool]:
    """The typed value of one input, and whether it is acceptable; None when none was given."""
    kind = field["type"]
    if kind == "boolean":
        return raw == "true", raw in (None, "", "true") and (raw == "true" or not field.get("required"))
    raw = (raw or "").strip()
    if not raw:
        return None, not field.get("required")
    if kind == "text":
        limit = min(int(field.get("maxLength", MAX_TEXT_VALUE)), MAX_TEXT_VALUE)
        return raw, len(raw) <= limit and text_problem(raw) is None
    if kind == "number":
        number = _number(raw, field)
        return number, number is not None
    if kind == "date":
        try:
            return date.fromisoformat(raw).isoformat(), len(raw) == 10
        except ValueError:
            return None, False
    return raw, raw in (field.get("options") or ())


def read_values(
    credential_id: str, fields: list[dict[str, Any]], form: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    """The values the subject gave for one FORM credential, by field name, and the labels of the
    fields whose value is missing or wrong."""
    values: dict[str, Any] = {}
    wrong: list[str] = []
    for field in fields:
        raw = form.get(input_name(credential_id, field))
        value, ok = _value(raw if isinstance(raw, str) else None, field)
        if not ok:
            wrong.append(str(field["label"]))
        values[field["name"]] = value
    return values, wrong


def shown(value: Any) -> str:
    """A value as its data item holds it (text)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


async def fill(
    ctx: Context, request_id: str, subject_id: str, credential_id: str, values: dict[str, Any]
) -> None:
    """Write the values into the open FORM credential of the subject's request, once.
    ``Conflict`` when the credential is no longer open."""
    written = await run_db(
        ctx.engine,
        store.fill_form,
        ctx.engine,
        request_id,
        credential_id,
        values,
        {name: shown(v) for name, v in values.items()},
    )
    if not written:
        raise Conflict("the form can no longer be filled in")
