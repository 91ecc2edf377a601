"""The audit trail: an organization's records (``GET /activity``), checking every chain
(``mandatum audit verify``), the reason an operator gives for a support action (recorded as
``reason`` in the record the action writes), and a record's details as the dashboard shows them
(``details_of``, ``changes_of``: a change as ``before → after``). Reading changes nothing, so only
the check takes an actor (who asked).

The dashboard's check of a chain (``check_chain``, any member may ask) verifies a signature per
record, about 0.2 ms each, so it runs on a thread of its own, one per process at a time with two
more waiting (``CHECKS``; beyond that ``Unavailable``, 503 with ``Retry-After``), never on the event
loop. The records are read 500 at a time, each batch on a connection of its own
(``store.audit_queries``), so a long chain holds no connection throughout."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from core.actors import Actor
from core.bounded import BoundedPool, PoolFull
from core.text import unsafe_characters
from services.context import Context
from services.errors import Invalid, Unavailable
from store import audit_queries, revocation
from store.audit import RECORD_TYPES as RECORD_TYPES  # every type of record, in the API's words
from store.audit import ChainCheck
from store.audit import document_of as document_of  # a stored record as it was signed
from store.audit_queries import ActivityFilter as ActivityFilter  # what ``activity`` lists
from store.tables import AuditRecord


async def activity(
    ctx: Context, org_id: str, where: audit_queries.ActivityFilter, page_index: int, page_size: int
) -> tuple[Sequence[AuditRecord], int]:
    """A page of the organization's records, newest first, and how many pages there are. A
    credential named by its id also finds the records that name it by its mandate URN, and the
    other way round."""
    if where.credential_id:
        found = revocation.parse_reference(where.credential_id)
        record = None
        if found is not None:
            record = await asyncio.to_thread(revocation.find_credential, ctx.engine, org_id, found)
        if record is not None:
            cred = record.credential
            aliases = tuple(i for i in (cred.id, cred.mandate_id) if i and i != where.credential_id)
            where = replace(where, credential_aliases=aliases)
    return await asyncio.to_thread(
        audit_queries.activity_page, ctx.engine, org_id, where, page_index, page_size
    )


def verify_chains(ctx: Context, actor: Actor, org_id: str | None = None) -> list[ChainCheck]:
    """Walk the organization's chain (or every organization's): seq, prevHash, hash, signature."""
    return audit_queries.verify_chains(ctx.engine, ctx.settings, org_id)


CHECKS = BoundedPool("audit-check", workers=1, waiting=2)
CHECK_RETRY_SECONDS = 30


async def check_chain(ctx: Context, actor: Actor, org_id: str) -> ChainCheck:
    """``verify_chains`` of one organization on a thread of ``CHECKS``; ``Unavailable`` when
    checks are running and waiting already."""
    try:
        (check,) = await CHECKS.run(verify_chains, ctx, actor, org_id)
    except PoolFull as exc:
        raise Unavailable(
            "Other chain checks are running: try again in a minute", retry_after=CHECK_RETRY_SECONDS
        ) from exc
    return check


MAX_REASON = 200


def checked_reason(raw: str) -> str:
    """A support action's reason as a person typed it, surrounding spaces dropped: 1 to
    ``MAX_REASON`` characters of one line of printable text (``core.text.unsafe_characters``: no
    control, line break or bidirectional override, since the trail shows it on one line)."""
    reason = raw.strip()
    if not reason:
        raise Invalid(f"the reason is empty: say why, in 1 to {MAX_REASON} characters")
    if len(reason) > MAX_REASON:
        raise Invalid(f"the reason is {len(reason)} characters long: at most {MAX_REASON}")
    unsafe = unsafe_characters(reason)
    if unsafe:
        raise Invalid(
            "the reason must be one line of printable characters: it holds " + ", ".join(unsafe[:5])
        )
    return reason


def optional_reason(raw: str | None) -> str | None:
    """``checked_reason`` of a reason given; None when none was (the dashboard's actions)."""
    return None if raw is None else checked_reason(raw)


# --- a record's details, as the activity page and the operators' timeline show them ------------

DETAIL_TEXT = 200  # characters of one value shown; the whole record is in the CSV and the API
ARROW = " → "


def detail_text(value: Any) -> str:
    """A value of a record's data as shown: a string as it is, anything else as JSON; cut after
    ``DETAIL_TEXT`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= DETAIL_TEXT else text[:DETAIL_TEXT] + "…"


def _side(value: Any) -> str:
    """One side of a change: none and an empty text said so rather than left blank."""
    return "none" if value is None else '""' if value == "" else detail_text(value)


def _a_setting(data: dict[str, Any]) -> bool:
    """Whether ``data`` is a settings record's (``setting``, its ``value`` and the ``previous`` one)."""
    return isinstance(data.get("setting"), str) and "value" in data


def changes_of(data: Any) -> dict[str, str]:
    """What a record with ``previous`` changed, field by field, as ``before → after`` (each side
    cut like any value), in the fields' order; a field ``previous`` names with its value unchanged
    is left out, and so is every field of a record without ``previous``. A settings record's
    ``previous`` is its ``value``'s: the change is named by its ``setting``."""
    if not isinstance(data, dict) or "previous" not in data:
        return {}
    previous = data["previous"]
    if _a_setting(data):
        pairs = {data["setting"]: (previous, data["value"])}
    elif isinstance(previous, dict):
        pairs = {name: (before, data.get(name)) for name, before in previous.items()}
    else:
        pairs = {"value": (previous, data.get("value"))}
    return {
        name: _side(before) + ARROW + _side(after)
        for name, (before, after) in sorted(pairs.items())
        if before != after
    }


def details_of(data: Any) -> list[tuple[str, str]]:
    """A record's data as (field, value) pairs for the Details column, by field name: what changed
    (``changes_of``: ``before → after`` in place of the field's value, a setting's under its name),
    the reason, the rest as it is. ``previous`` itself is not a row of its own."""
    if not isinstance(data, dict):
        return []
    changes = changes_of(data)
    hidden = {"previous"}
    if changes and _a_setting(data):
        hidden |= {"setting", "value"}
    shown = {name: detail_text(value) for name, value in data.items() if name not in hidden}
    return sorted({**shown, **changes}.items())
