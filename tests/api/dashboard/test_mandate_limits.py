"""A mandate's use limits on its dashboard page (issue 31): the executions left (the smallest room
of its executions bounds), each bound's use in its current UTC calendar period with when that
period ends, and the history of its use: the allowed verifications with their date, verifier and
the amount each sum limit counted, and the ones denied for want of room (``limit_exceeded``).
Verifications of other kinds, and ones made up about the mandate, are not its use. A mandate
without bounds says "No use limits"."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime
from typing import Any
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, update
from sqlmodel import col, select
from temporalio.client import Client

from core.ids import urn
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from policy.limits import window
from services import limit_views
from services.context import Context
from store import actions
from store.db import read_session, utcnow, write_session
from store.tables import Credential, Verification
from tests.support.api_client import Credentials, SignedClient
from tests.support.audit import issued_mandate
from tests.support.dashboard import log_in_as, page_client
from tests.support.documents import LEASE
from tests.support.mandates import PAY_WITH_LIMITS as PAY
from tests.support.mandates import issued_mandate as accepted_over_the_api
from tests.support.presentations import checked, presented, verify

pytestmark = pytest.mark.usefixtures("no_server_errors")

NOW = datetime(2026, 11, 18, 10, 0, tzinfo=UTC)  # a Wednesday, in ISO week 2026-W47


def rows(section: str) -> list[list[str]]:
    """Each body row of a section's tables as the text of its cells."""
    found = []
    for body in re.findall(r"<tbody>(.*?)</tbody>", section, re.S):
        for row in re.findall(r"<tr[^>]*>(.*?)</tr>", body, re.S):
            cells = re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)
            found.append([" ".join(html.unescape(re.sub(r"<[^>]+>", " ", c)).split()) for c in cells])
    return found


def limits_section(page: str) -> str:
    start = page.index('<section class="card" aria-labelledby="limits-heading">')
    return page[start : page.index("</section>", start)]


async def test_a_budgets_use_and_its_history_after_verifications_over_the_api(
    api: SignedClient, temporal: Client, app: FastAPI, ctx: Context, engine: Engine, settings: Settings
) -> None:
    version = actions.install_published(engine, api.creds.organization_id, PAY)
    credential = {
        "type": "POLICY",
        "name": "Invoices",
        "action": {"id": version.action_id, "userParams": {"monthlyLimit": 300}},
        "maxExecutions": 3,
    }
    mandate = await accepted_over_the_api(api, temporal, credentials=[credential, LEASE])
    [_, lease] = (await api.get(f"/request/{mandate['requestId']}")).json()["credentials"]

    async def verified(amount: float, reason: str | None = None) -> dict[str, Any]:
        vp = (await presented(api, mandate["id"]))["presentation"]
        return checked(await verify(api, vp, {"amount": amount}), engine, settings, reason)

    first, second = await verified(120), await verified(80.5)
    over = await verified(150, "limit_exceeded")  # 99.5 EUR left this month
    await verified(-5, "rule_failed")  # not a use, nor refused for want of room
    now = utcnow()
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, api.creds, MemberRole.SUPPORT, "support")
        page = (await browser.get(f"/dashboard/mandates/{mandate['id']}")).text
        document = (await browser.get(f"/dashboard/mandates/{quote(lease['id'], safe='')}")).text
    assert LEASE["name"] in document and "Use limits" not in document  # a document is no mandate
    section = limits_section(page)
    assert re.search(r'<strong class="count">1</strong>\s*execution remaining', section)
    month_ends, day_ends = (window(p, now)[1] for p in ("P1M", "P1D"))
    assert month_ends is not None and day_ends is not None
    assert rows(section)[:3] == [
        [
            "monthly At most 300 EUR per calendar month (UTC): Card payments",
            "sum of amount",
            "200.5 EUR / 300 EUR",
            "99.5 EUR",
            "per calendar month (UTC)",
            month_ends.strftime("%Y-%m-%d 00:00 UTC"),
        ],
        [
            "daily At most 10 uses per day (UTC)",
            "rate (uses per period)",
            "2 / 10",
            "8",
            "per day (UTC)",
            day_ends.strftime("%Y-%m-%d 00:00 UTC"),
        ],
        [
            "maxExecutions (set by the request) At most 3 uses",
            "executions (uses)",
            "2 / 3",
            "1",
            "the mandate's life",
            "never (counted over the mandate's life)",
        ],
    ]
    history = rows(section)[3:]
    assert [row[1:] for row in history] == [
        ["denied limit_exceeded : no room under monthly", api.creds.did, "150 EUR (not counted)"],
        ["allowed", api.creds.did, "80.5 EUR"],
        ["allowed", api.creds.did, "120 EUR"],
    ]
    stored = {v.id: v for v in verifications_of(engine, mandate["id"])}
    assert [row[0] for row in history] == [
        stored[r["receipt"]["id"]].created_at.strftime("%Y-%m-%d %H:%M UTC") for r in (over, second, first)
    ]
    assert "<code>monthly</code>: amount (<code>amount</code>)" in section


def verifications_of(engine: Engine, mandate_id: str) -> list[Verification]:
    with read_session(engine) as session:
        return list(session.exec(select(Verification).where(col(Verification.mandate_id) == mandate_id)))


def written(engine: Engine, mandate_id: str, presentation_id: str | None, at: datetime, **fields: Any) -> str:
    """A verification row of the mandate, as the verify path writes one."""
    verification = Verification(
        id=urn("receipt"),
        organization_id=fields.pop("verifier_org"),
        presentation_id=presentation_id,
        mandate_id=mandate_id,
        decision=fields.pop("decision", "allow"),
        reason=fields.pop("reason", None),
        execution_params=fields.pop("params"),
        receipt=fields.pop("receipt"),
        created_at=at,
    )
    with write_session(engine) as session:
        session.add(verification)
    return verification.id


BOUNDS = [
    {"name": "useCount", "kind": "executions", "max": 10},
    {"name": "monthly", "kind": "sum", "max": 300, "param": "amount", "period": "P1M", "unit": "EUR"},
    {"name": "daily", "kind": "rate", "max": 3, "period": "P1D"},
    {"name": "weekly", "kind": "sum", "max": 1000, "param": "points", "period": "P1W"},
]
NEVER = "never (counted over the mandate's life)"
DAY = "2026-11-19 00:00 UTC"
MAX_EXECUTIONS = "maxExecutions (set by the request) At most {} uses"
USAGE = {
    "useCount": {"p": "", "u": "4"},
    "maxExecutions": {"p": "", "u": "4"},
    "monthly": {"p": "2026-11", "u": "250.5"},
    "daily": {"p": "2026-11-17", "u": "3"},  # yesterday's: nothing used today
    "weekly": {"p": "2026-W47", "u": "1000"},
}


async def test_each_bound_in_its_period_and_the_history_from_the_rows(
    app: FastAPI,
    ctx: Context,
    org: Credentials,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    with write_session(engine) as session:
        session.execute(
            update(Credential)
            .where(col(Credential.id) == issued.credential_id)
            .values(limits=BOUNDS, max_executions=5, usage=USAGE)
        )
    monkeypatch.setattr(limit_views, "utcnow", lambda: NOW)
    verifier = "did:web:verifier.example"
    async with page_client(app) as browser, page_client(app) as api_http:
        vp = (await presented(SignedClient(api_http, org), issued.mandate_id))["presentation"]
        common = {"verifier_org": org.organization_id}
        room = [{"name": "monthly", "result": "fail"}, {"name": "daily", "result": "pass"}]
        for at, extra in (
            (datetime(2026, 11, 17, 8, 5, tzinfo=UTC), {"params": {"amount": 200, "points": 600}}),
            (datetime(2026, 11, 18, 9, 0, tzinfo=UTC), {"params": {"amount": 50.5, "points": 400}}),
            (
                datetime(2026, 11, 18, 9, 30, tzinfo=UTC),
                {"params": {"amount": 60}, "decision": "deny", "reason": "limit_exceeded", "limits": room},
            ),
            (
                datetime(2026, 11, 18, 9, 40, tzinfo=UTC),
                {"params": {"amount": 70}, "decision": "deny", "reason": "rule_failed"},
            ),
        ):
            receipt = {"verifier": verifier, **({"limits": extra.pop("limits")} if "limits" in extra else {})}
            written(engine, issued.mandate_id, vp["id"], at, receipt=receipt, **common, **extra)
        made_up = written(  # a verifier's own presentation claiming the mandate: not its use
            engine, issued.mandate_id, urn("presentation"), NOW, params={"amount": 1}, receipt={}, **common
        )
        await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        page = (await browser.get(f"/dashboard/mandates/{issued.credential_id}")).text
    section = limits_section(page)
    assert re.search(r'<strong class="count">1</strong>\s*execution remaining', section)
    assert "as of 2026-11-18 10:00 UTC" in section
    assert rows(section) == [
        ["useCount At most 10 uses", "executions (uses)", "4 / 10", "6", "the mandate's life", NEVER],
        [
            "monthly At most 300 EUR per calendar month (UTC)",
            "sum of amount",
            "250.5 EUR / 300 EUR",
            "49.5 EUR",
            "per calendar month (UTC)",
            "2026-12-01 00:00 UTC",
        ],
        ["daily At most 3 uses per day (UTC)", "rate (uses per period)", "0 / 3", "3", "per day (UTC)", DAY],
        [
            "weekly At most 1,000 in total amount per week (Monday to Sunday, UTC)",
            "sum of points",
            "1,000 / 1,000",
            "0 (none left)",
            "per week (Monday to Sunday, UTC)",
            "2026-11-23 00:00 UTC",
        ],
        [MAX_EXECUTIONS.format(5), "executions (uses)", "4 / 5", "1", "the mandate's life", NEVER],
        # the history, newest first: the rule's denial and the made-up verification are not in it
        [
            "2026-11-18 09:30 UTC",
            "denied limit_exceeded : no room under monthly",
            verifier,
            "60 EUR (not counted)",
            "—",
        ],
        ["2026-11-18 09:00 UTC", "allowed", verifier, "50.5 EUR", "400"],
        ["2026-11-17 08:05 UTC", "allowed", verifier, "200 EUR", "600"],
    ]
    assert made_up not in page and "rule_failed" not in section
    assert "<code>weekly</code>: amount (<code>points</code>)" in section


async def test_spent_executions_and_a_mandate_without_bounds(
    app: FastAPI,
    ctx: Context,
    org: Credentials,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(limit_views, "utcnow", lambda: NOW)
    plain = issued_mandate(engine, cipher, settings, org.organization_id)
    spent = issued_mandate(engine, cipher, settings, org.organization_id)
    rates = issued_mandate(engine, cipher, settings, org.organization_id)
    with write_session(engine) as session:
        for cred_id, values in (
            (spent.credential_id, {"max_executions": 2, "usage": {"maxExecutions": {"p": "", "u": "2"}}}),
            (rates.credential_id, {"limits": [BOUNDS[2]], "usage": None}),
        ):
            session.execute(update(Credential).where(col(Credential.id) == cred_id).values(**values))
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        pages = [
            (await browser.get(f"/dashboard/mandates/{m.credential_id}")).text for m in (plain, spent, rates)
        ]
    none, used_up, rate_only = (limits_section(p) for p in pages)
    assert "No use limits" in none and "<table" not in none and "remaining" not in none
    assert re.search(r'<strong class="count">0</strong>\s*executions remaining', used_up)
    assert "spent: the mandate cannot be used again" in used_up
    assert rows(used_up) == [
        [MAX_EXECUTIONS.format(2), "executions (uses)", "2 / 2", "0 (none left)", "the mandate's life", NEVER]
    ]
    assert "Not used yet" in used_up
    assert "No limit on the number of executions" in rate_only and 'class="count"' not in rate_only
    assert rows(rate_only) == [
        ["daily At most 3 uses per day (UTC)", "rate (uses per period)", "0 / 3", "3", "per day (UTC)", DAY]
    ]
