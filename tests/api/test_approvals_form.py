"""A FORM approval filled in by its subject on the approval page: the inputs by field type, the
values checked on the server (a missing required field, a number out of bounds, an option not
offered, a malformed date: the page again, nothing stored), then signed into the issued document
credential (``credentialSubject.data``) and shown by GET /request; a second submission changes
nothing."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from services.context import Context
from tests.support.approvals import FORM, make
from tests.support.live_stack import LiveStack
from tests.support.sdk import message_to, pass_code

GOOD = {"fullName": "Ana Silva", "age": "42", "start": "2026-12-01", "newsletter": "true", "plan": "pro"}


def form_of(
    credential_id: str, values: dict[str, str], session: str, choice: str = "accept"
) -> dict[str, str]:
    fields = {f"field-{credential_id}-{name}": value for name, value in values.items()}
    return {"session": session, f"decision-{credential_id}": choice, **fields}


async def issued(live: LiveStack, api: Any, request_id: str) -> dict[str, Any]:
    deadline = time.monotonic() + 30
    while True:
        got = (await api.get(f"/request/{request_id}")).json()
        if got["credentials"][0]["status"] == "ACTIVE":
            return dict(got)
        assert time.monotonic() < deadline, got
        await asyncio.sleep(0.1)


async def test_the_subject_fills_in_the_form_and_it_is_signed(live: LiveStack, ctx: Context) -> None:
    creds = live.new_org()
    api = live.api(creds)
    form_id = make(ctx, creds.organization_id, FORM)
    contact = f"form-{uuid.uuid4().hex[:8]}@example.com"
    created = await api.post(
        "/request", {"contacts": [contact], "securityLevel": "CONTACT", "resourcesIds": [form_id]}
    )
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    [credential] = created.json()["data"]["credentials"]
    message = await message_to(live, contact)
    session = await pass_code(live, message)

    page = await live.http.get(message.link)
    review = await live.http.post(f"{message.link}/otp", data={"code": message.code})
    for expected in (
        f'name="field-{credential["id"]}-fullName"',
        'type="number"',
        'type="date"',
        'type="checkbox"',
        "<option>pro</option>",
    ):
        assert expected in review.text or expected in page.text, expected

    bad = [
        ({**GOOD, "fullName": ""}, "Full name"),
        ({**GOOD, "age": "17"}, "Age"),
        ({**GOOD, "age": "nan"}, "Age"),
        ({**GOOD, "plan": "gold"}, "Plan"),
        ({**GOOD, "start": "2026-13-01"}, "Start date"),
        ({**GOOD, "newsletter": "yes"}, "Newsletter"),
    ]
    for values, label in bad:
        refused = await live.http.post(
            f"{message.link}/decide", data=form_of(credential["id"], values, session)
        )
        assert (
            refused.status_code == 400 and "Check these fields" in refused.text and label in refused.text
        ), label
    still = (await api.get(f"/request/{request_id}")).json()["credentials"][0]
    assert [item["value"] for item in still["data"]] == ["", "", "", "", ""]

    decided = await live.http.post(f"{message.link}/decide", data=form_of(credential["id"], GOOD, session))
    assert decided.status_code == 200, decided.text
    request = await issued(live, api, request_id)
    [done] = request["credentials"]
    filled = ["Ana Silva", "42", "2026-12-01", "true", "pro"]
    assert [item["value"] for item in done["data"]] == filled
    signed = done["w3cCredential"]["credentialSubject"]["data"]
    assert [item["value"] for item in signed] == filled
    assert [item["type"] for item in signed] == [
        "FORM:text",
        "FORM:number",
        "FORM:date",
        "FORM:boolean",
        "FORM:choice",
    ]

    again = await live.http.post(
        f"{message.link}/decide", data=form_of(credential["id"], {**GOOD, "fullName": "Mallory"}, session)
    )
    assert again.status_code in (200, 410)
    after = (await api.get(f"/request/{request_id}")).json()["credentials"][0]
    assert after["data"][0]["value"] == "Ana Silva"


async def test_declining_a_form_needs_no_values(live: LiveStack, ctx: Context) -> None:
    creds = live.new_org()
    api = live.api(creds)
    form_id = make(ctx, creds.organization_id, FORM)
    contact = f"form-{uuid.uuid4().hex[:8]}@example.com"
    created = await api.post(
        "/request", {"contacts": [contact], "securityLevel": "CONTACT", "resourcesIds": [form_id]}
    )
    [credential] = created.json()["data"]["credentials"]
    message = await message_to(live, contact)
    session = await pass_code(live, message)
    declined = await live.http.post(
        f"{message.link}/decide", data=form_of(credential["id"], {}, session, "reject")
    )
    assert declined.status_code == 200, declined.text
    got = (await api.get(f"/request/{created.json()['data']['id']}")).json()["credentials"][0]
    assert got["status"] == "REJECTED" and [item["value"] for item in got["data"]] == ["", "", "", "", ""]
