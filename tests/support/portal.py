"""The subject's portal from a test's side: a mandate issued to a contact of one's own (with its
keyed hash, as the API stores it), the code read from the outbox, and a signed-in session."""

from __future__ import annotations

import asyncio
import re
import secrets
import time
from datetime import timedelta

import httpx

from adapters.delivery import Outbox
from cli.devstack import EXAMPLE_ACTION_ID
from core.actors import TEMPORAL
from core.ids import urn
from services import mandates, portal
from services.context import Context
from store import actions
from store import requests as store
from store.db import utcnow
from store.tables import PortalSession
from tests.support.api_client import LIVE_LIMITS
from tests.support.audit import Issued
from tests.support.journey_messages import TEST_OUTBOX, code_in
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of


def new_contact(tag: str = "portal") -> str:
    return f"{tag}-{secrets.token_hex(5)}@example.com"


def issued_to(
    ctx: Context,
    org_id: str,
    contact: str,
    name: str = "Rent",
    max_executions: int | None = None,
    before: tuple[str, ...] = (),
) -> Issued:
    """An ACTIVE mandate of ``org_id`` whose request's subject is ``contact`` (after the subjects
    ``before``, when given; every one accepts: what the request workflow does on acceptance,
    called directly), allowing ``max_executions`` uses. ``subject_id`` is ``contact``'s."""
    pin, problems = actions.pin_for_request(
        ctx.engine, org_id, EXAMPLE_ACTION_ID, {"maxAmount": 1200}, where="credentials.0.action"
    )
    assert pin is not None, problems
    kind = {True: "phone", False: "email"}
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[
            store.NewContact(c, kind[c.startswith("+")], contact_hash=ctx.journey.contact_hash(c))
            for c in (*before, contact)
        ],
        credentials=[
            store.NewCredential("POLICY", name, scope="payments", action=pin, max_executions=max_executions)
        ],
        name="Pay the rent",
    )
    bundle = store.create_request(ctx.engine, org_id, new, timedelta(days=30), 10_000, None, None)
    assert isinstance(bundle, store.RequestBundle)
    cred = bundle.credentials[0]
    for _, subject in bundle.subjects:
        last = subject.contact == contact
        store.record_decision(
            ctx.engine,
            urn("decision"),
            bundle.request.id,
            cred.id,
            subject.id,
            True,
            "email",
            "hosted",
            utcnow(),
            last,
        )
    [own] = [s.id for _, s in bundle.subjects if s.contact == contact]
    done = mandates.issue(ctx.engine, ctx.cipher, ctx.settings, cred.id, actor=TEMPORAL)
    return Issued(bundle.request.id, cred.id, done.mandate_id, own)


async def settle(ctx: Context) -> None:
    """Wait for the work the service started after its answer (the code's send)."""
    while ctx.tasks:
        await asyncio.gather(*list(ctx.tasks))


async def code_sent_to(contact: str, wait: float = 10.0) -> str:
    """The code of the newest portal message to ``contact`` in the test outbox."""
    deadline = time.monotonic() + wait
    while True:
        found = [
            e
            for e in await asyncio.to_thread(Outbox(TEST_OUTBOX).entries, contact, 50)
            if "mandates" in e.text
        ]
        if found:
            return code_in(found[0].text)
        if time.monotonic() > deadline:
            raise AssertionError(f"no portal code for {contact}")
        await asyncio.sleep(0.05)


def messages_to(contact: str) -> int:
    return len(Outbox(TEST_OUTBOX).entries(contact, 50))


async def signed_in(ctx: Context, contact: str, client: str = "198.18.9.9") -> tuple[PortalSession, str]:
    """A live session of ``contact`` (its code asked for and entered) and the browser's token."""
    token = portal.new_token()
    await portal.ask_code(ctx, token, contact, client)
    await settle(ctx)
    entered = await portal.enter_code(ctx, token, await code_sent_to(contact), client)
    assert entered.outcome == portal.PASSED and entered.session_token is not None, entered
    session = portal.session_of(ctx, entered.session_token)
    assert session is not None
    return session, entered.session_token


CSRF_RE = re.compile(r'name="csrf" value="([0-9a-f]{64})"')
MANDATE_LINK_RE = re.compile(r'href="/portal/mandates/([0-9a-f]{24})\?')


def _csrf(page: httpx.Response) -> str:
    found = CSRF_RE.search(page.text)
    assert page.status_code == 200 and found is not None, (page.status_code, page.text[:300])
    return found.group(1)


async def revoke_in_portal(live: LiveStack, contact: str) -> str:
    """On the live stack, as a browser would: ``contact`` signs in to the portal with the code from
    the mailbox and revokes their only mandate after the confirmation; its credential id."""
    headers = {"Sec-Fetch-Site": "same-origin"}
    async with httpx.AsyncClient(
        base_url=live.url, headers=headers, timeout=30, limits=LIVE_LIMITS
    ) as browser:
        before = len(live.smtp.received_for(contact))
        asked = await browser.post(
            "/portal/code-request", data={"csrf": _csrf(await browser.get("/portal")), "contact": contact}
        )
        assert asked.status_code == 303, asked.text
        deadline = time.monotonic() + 20
        while len(live.smtp.received_for(contact)) <= before:
            assert time.monotonic() < deadline, f"no portal code for {contact}"
            await asyncio.sleep(0.05)
        code = code_in(text_of(live.smtp.received_for(contact)[-1].message))
        entered = await browser.post(
            "/portal/code", data={"csrf": _csrf(await browser.get("/portal/code")), "code": code}
        )
        assert entered.status_code == 303, entered.text
        [credential_id] = MANDATE_LINK_RE.findall((await browser.get("/portal")).text)
        confirm = await browser.get(f"/portal/mandates/{credential_id}/revoke")
        done = await browser.post(f"/portal/mandates/{credential_id}/revoke", data={"csrf": _csrf(confirm)})
        assert done.status_code == 303, done.text
        return str(credential_id)
