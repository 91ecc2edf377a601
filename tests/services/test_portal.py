"""services.portal and services.portal_mandates: the code (same answer for known and unknown
contacts, lockout, expiry), the session's end, another person's mandate, an organization with
the portal off, and a revocation by the subject (status list bit, audit actor, one event)."""

from __future__ import annotations

import asyncio
import base64
import gzip
import secrets
import time
from datetime import timedelta

import pytest
from sqlalchemy import update
from sqlmodel import col, select

from adapters.delivery import Outbox
from core.actors import Actor
from core.kinds import CredentialStatus
from services import mandates, orgs, portal, portal_mandates
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import audit, limit_use, status_lists
from store.db import read_session, utcnow, write_connection
from store.tables import Credential, PortalChallenge, PortalSession, WebhookEvent
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import actors
from tests.support.journey_messages import TEST_OUTBOX, code_in
from tests.support.portal import code_sent_to, issued_to, messages_to, new_contact, settle, signed_in
from wire.webhook_models import MandateRevokedEvent

pytestmark = pytest.mark.usefixtures("no_server_errors")
CLIENT = "198.18.7.7"


def challenge(ctx: Context, token: str) -> PortalChallenge:
    with read_session(ctx.engine) as session:
        found = session.get(PortalChallenge, portal.token_hash(ctx, token))
    assert found is not None
    return found


async def test_known_and_unknown_contacts_get_the_same_answer(ctx: Context, org: Credentials) -> None:
    known, unknown = new_contact("known"), new_contact("unknown")
    issued_to(ctx, org.organization_id, known)
    token_k, token_u = portal.new_token(), portal.new_token()
    answer_k = await portal.ask_code(ctx, token_k, known, CLIENT)
    answer_u = await portal.ask_code(ctx, token_u, unknown, CLIENT)
    assert type(answer_k) is type(answer_u) and answer_k.contact_shown.startswith("k\u2022\u2022\u2022@")
    await settle(ctx)
    assert len(await code_sent_to(known)) == 6
    assert messages_to(unknown) == 0
    # both challenges are there, the unknown one without a code: every code is wrong alike
    assert challenge(ctx, token_k).code_hash and not challenge(ctx, token_u).code_hash
    code = await code_sent_to(known)
    wrong_k = await portal.enter_code(ctx, token_k, f"{(int(code) + 1) % 10**6:06d}", CLIENT)
    wrong_u = await portal.enter_code(ctx, token_u, "000000", CLIENT)
    assert (
        (wrong_k.outcome, wrong_k.attempts_left)
        == (wrong_u.outcome, wrong_u.attempts_left)
        == (portal.WRONG, 4)
    )


async def test_the_answer_never_waits_for_the_send(
    ctx: Context, org: Credentials, monkeypatch: pytest.MonkeyPatch
) -> None:
    known = new_contact("slow")
    issued_to(ctx, org.organization_id, known)
    sent: list[str] = []

    def slow_send(*args: object) -> bool:
        time.sleep(1.0)
        sent.append("sent")
        return True

    monkeypatch.setattr(portal, "send_if_known", slow_send)
    started = time.monotonic()
    await portal.ask_code(ctx, portal.new_token(), known, CLIENT)
    assert time.monotonic() - started < 0.8 and sent == []
    await settle(ctx)
    assert sent == ["sent"]


async def test_a_malformed_contact_or_code_is_invalid(ctx: Context) -> None:
    with pytest.raises(Invalid):
        await portal.ask_code(ctx, portal.new_token(), "not a contact", CLIENT)
    with pytest.raises(Invalid):
        await portal.ask_code(ctx, portal.new_token(), "x" * 400 + "@example.com", CLIENT)
    with pytest.raises(Invalid):
        await portal.enter_code(ctx, portal.new_token(), "12345", CLIENT)
    assert (await portal.enter_code(ctx, "forged", "123456", CLIENT)).outcome == portal.NO_CODE


async def test_the_fifth_wrong_code_locks_even_the_right_one(ctx: Context, org: Credentials) -> None:
    known = new_contact("lock")
    issued_to(ctx, org.organization_id, known)
    token = portal.new_token()
    await portal.ask_code(ctx, token, known, CLIENT)
    await settle(ctx)
    code = await code_sent_to(known)
    wrong = f"{(int(code) + 1) % 10**6:06d}"
    outcomes = [(await portal.enter_code(ctx, token, wrong, CLIENT)).outcome for _ in range(5)]
    assert outcomes == [portal.WRONG] * 4 + [portal.LOCKED]
    assert (await portal.enter_code(ctx, token, code, CLIENT)).outcome == portal.LOCKED


async def test_an_expired_code_opens_nothing(ctx: Context, org: Credentials) -> None:
    known = new_contact("expiry")
    issued_to(ctx, org.organization_id, known)
    token = portal.new_token()
    await portal.ask_code(ctx, token, known, CLIENT)
    await settle(ctx)
    with write_connection(ctx.engine) as conn:
        conn.execute(
            update(PortalChallenge)
            .where(col(PortalChallenge.token_hash) == portal.token_hash(ctx, token))
            .values(expires_at=utcnow() - timedelta(seconds=1))
        )
    assert (await portal.enter_code(ctx, token, await code_sent_to(known), CLIENT)).outcome == portal.EXPIRED


async def test_a_session_ends_idle_at_its_age_and_at_sign_out(ctx: Context, org: Credentials) -> None:
    known = new_contact("session")
    issued_to(ctx, org.organization_id, known)
    _, token = await signed_in(ctx, known)
    now = utcnow()
    assert portal.session_of(ctx, token, now + timedelta(minutes=14)) is not None
    assert portal.session_of(ctx, token, now + timedelta(minutes=14 + 16)) is None  # idle
    for minutes in (14, 28, 42, 56):  # used all along, still ended at one hour
        assert portal.session_of(ctx, token, now + timedelta(minutes=minutes)) is not None
    assert portal.session_of(ctx, token, now + timedelta(minutes=61)) is None
    _, fresh = await signed_in(ctx, known)
    portal.sign_out(ctx, fresh)
    assert portal.session_of(ctx, fresh) is None
    with read_session(ctx.engine) as db:  # only keyed hashes are stored
        row = db.get(PortalSession, portal.token_hash(ctx, fresh))
        assert (
            row is not None
            and fresh not in (row.token_hash, row.contact_hash)
            and known not in row.contact_shown
        )


def test_csrf_is_the_browsers_own(ctx: Context) -> None:
    one, other = portal.new_token(), portal.new_token()
    assert portal.csrf_valid(ctx, one, portal.csrf_token(ctx, one))
    assert not portal.csrf_valid(ctx, other, portal.csrf_token(ctx, one))
    assert not portal.csrf_valid(ctx, one, "") and not portal.csrf_valid(
        ctx, None, portal.csrf_token(ctx, one)
    )


async def test_sends_per_contact_are_limited(ctx: Context) -> None:
    contact = new_contact("flood")
    for i in range(portal.SENDS_PER_CONTACT):
        await portal.ask_code(ctx, portal.new_token(), contact, f"198.18.8.{i + 1}")
    with pytest.raises(Exception, match="Too many tries") as refused:
        await portal.ask_code(ctx, portal.new_token(), contact, "198.18.8.99")
    assert refused.value.retry_after and refused.value.retry_after > 0  # type: ignore[attr-defined]
    await settle(ctx)


async def test_every_organizations_mandates_and_none_of_anothers(ctx: Context, org: Credentials) -> None:
    person, stranger = new_contact("person"), new_contact("stranger")
    other_org = new_org(ctx.engine, ctx.cipher, ctx.settings)
    mine = [
        issued_to(ctx, org.organization_id, person),
        issued_to(ctx, other_org.organization_id, person, "Phone"),
    ]
    theirs = issued_to(ctx, org.organization_id, stranger)
    session, _ = await signed_in(ctx, person)
    listed = await portal_mandates.mandates(ctx, session)
    assert {s.mandate.credential.id for s in listed} == {m.credential_id for m in mine}
    assert {s.mandate.organization.id for s in listed} == {org.organization_id, other_org.organization_id}
    assert all(s.status == CredentialStatus.ACTIVE and s.mandate.action_name for s in listed)
    for bad in (theirs.credential_id, theirs.mandate_id, "0" * 24, "../x", "x" * 500):
        with pytest.raises(NotFound):
            await portal_mandates.mandate(ctx, session, bad)
        with pytest.raises(NotFound):
            await portal_mandates.revoke(ctx, session, bad)
    detail = await portal_mandates.mandate(ctx, session, mine[0].credential_id, "FRA")
    assert detail.mandate.subject.id == mine[0].subject_id and detail.check_count == 0
    assert detail.mandate.action_name and detail.mandate.action_version == 1


async def test_the_limits_read_in_the_pages_language_with_their_use(ctx: Context, org: Credentials) -> None:
    person = new_contact("limits")
    issued = issued_to(ctx, org.organization_id, person, max_executions=3)
    session, _ = await signed_in(ctx, person)
    detail = await portal_mandates.mandate(ctx, session, issued.credential_id, "FRA")
    assert [(u.words, u.used, u.remaining) for u in detail.limits] == [("Au plus 3 utilisations", 0, 3)]


async def test_an_organization_with_the_portal_off_is_hidden(ctx: Context) -> None:
    person = new_contact("off")
    off = new_org(ctx.engine, ctx.cipher, ctx.settings)
    on = new_org(ctx.engine, ctx.cipher, ctx.settings)
    hidden, shown = issued_to(ctx, off.organization_id, person), issued_to(ctx, on.organization_id, person)
    orgs.set_portal_enabled(ctx, Actor.shell_operator("tests"), off.organization_id, False)
    assert actors(ctx.engine, off.organization_id, audit.SETTINGS_CHANGED)[-1] == "operator:tests"
    session, _ = await signed_in(ctx, person)
    assert [s.mandate.credential.id for s in await portal_mandates.mandates(ctx, session)] == [
        shown.credential_id
    ]
    with pytest.raises(NotFound):
        await portal_mandates.revoke(ctx, session, hidden.credential_id)
    # a contact only an organization with the portal off knows gets no code
    only_off = new_contact("onlyoff")
    issued_to(ctx, off.organization_id, only_off)
    await portal.ask_code(ctx, portal.new_token(), only_off, CLIENT)
    await settle(ctx)
    assert messages_to(only_off) == 0


def bit(ctx: Context, cred: Credential) -> int:
    assert cred.status_list_id is not None and cred.status_list_index is not None
    served = status_lists.served_list(ctx.engine, ctx.cipher, ctx.settings, cred.status_list_id)
    assert served is not None
    encoded = served.document["credentialSubject"]["encodedList"][1:]
    raw = gzip.decompress(base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    return (raw[cred.status_list_index // 8] >> (7 - cred.status_list_index % 8)) & 1


async def test_revoking_sets_the_bit_names_the_subject_and_makes_one_event(
    ctx: Context, org: Credentials
) -> None:
    person = new_contact("revoke")
    issued = issued_to(ctx, org.organization_id, person, before=(new_contact("grantor"),))
    session, _ = await signed_in(ctx, person)
    before = await portal_mandates.mandate(ctx, session, issued.credential_id)
    assert before.revocable and bit(ctx, before.mandate.credential) == 0
    done = await portal_mandates.revoke(ctx, session, issued.credential_id)
    assert done.credential_id == issued.mandate_id and done.receipt["reason"] == "subject"
    after = await portal_mandates.mandate(ctx, session, issued.credential_id)
    assert after.status == CredentialStatus.REVOKED and not after.revocable
    assert after.mandate.credential.revocation_reason == "subject"
    assert bit(ctx, after.mandate.credential) == 1
    assert actors(ctx.engine, org.organization_id, audit.MANDATE_REVOKED) == [f"subject:{issued.subject_id}"]
    with pytest.raises(Conflict):
        await portal_mandates.revoke(ctx, session, issued.credential_id)
    with read_session(ctx.engine) as db:
        events = db.exec(
            select(WebhookEvent).where(
                WebhookEvent.organization_id == org.organization_id,
                WebhookEvent.request_id == issued.request_id,
            )
        ).all()
    assert [e.event_type for e in events] == ["mandate.revoked"]
    payload = MandateRevokedEvent.model_validate(events[0].payload)
    assert payload.revocation.reason == "subject" and payload.credential.id == issued.mandate_id
    assert payload.credential.status == CredentialStatus.REVOKED
    assert payload.user.contact == person  # the subject who revoked it, not the request's first
    # the API's own revocation is refused now too: one revocation, one record
    with pytest.raises(Conflict):
        await mandates.revoke(ctx, Actor.api_key(org.key_id), org.organization_id, issued.mandate_id, None)
    await asyncio.sleep(0)


async def test_the_workers_pass_finds_a_subjects_revocation_whose_event_was_not_made(
    ctx: Context, org: Credentials
) -> None:
    issued = issued_to(ctx, org.organization_id, new_contact("pass"))
    since = utcnow() - timedelta(seconds=2)
    await mandates.revoke(
        ctx, Actor.subject(issued.subject_id), org.organization_id, issued.credential_id, "subject"
    )
    missed = limit_use.unannounced(ctx.engine, since, utcnow() + timedelta(seconds=1))
    assert issued.credential_id in [m.credential_row for m in missed]


async def test_a_phone_number_gets_its_code_by_sms_in_the_pages_language(
    ctx: Context, org: Credentials
) -> None:
    phone = f"+35191{secrets.randbelow(10**7):07d}"
    issued_to(ctx, org.organization_id, phone)
    token = portal.new_token()
    asked = await portal.ask_code(ctx, token, phone, CLIENT, "SPA")
    assert asked.contact_shown.endswith(phone[-4:]) and phone not in asked.contact_shown
    await settle(ctx)
    [message] = Outbox(TEST_OUTBOX).entries(phone, 5)
    assert message.channel == "sms" and " es su código para ver sus mandatos" in message.text
    entered = await portal.enter_code(ctx, token, code_in(message.text), CLIENT)
    assert entered.outcome == portal.PASSED
