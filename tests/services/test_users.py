"""services.users on both databases: each item answered in its place (created, a contact twice,
an internalId twice, one of another user, an item the route could not read), the call refused
whole only outside 1 to 100 items, the rate counted per import, and a user read by exactly one of
contact, DID and internalId, another organization's being none."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import Engine

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import users
from services.context import Context
from services.errors import Invalid, NotFound, TooMany
from tests.conftest import new_org
from tests.support.api_client import Credentials
from wire.users import CreateSubjectIn

ACTOR = Actor.api_key("k1")


def item(contact: str, **kw: object) -> CreateSubjectIn:
    return CreateSubjectIn.model_validate({"contact": contact, **kw})


def mailbox() -> str:
    return f"svc-{uuid.uuid4().hex[:8]}@example.com"


async def test_each_item_is_answered_in_its_place(ctx: Context, org: Credentials) -> None:
    a, b, c, d = mailbox(), mailbox(), mailbox(), mailbox()
    await users.import_users(
        ctx, ACTOR, org.organization_id, [item(d, internalId="held")], [], rate_per_minute=100
    )
    items: list[CreateSubjectIn | users.Refusal] = [
        item(a, internalId="r-a"),
        item(a),
        item(b, internalId="r-a"),
        item(c, internalId="held"),
        users.Refusal("contact is required"),
    ]
    done = await users.import_users(ctx, ACTOR, org.organization_id, items, [], rate_per_minute=100)
    assert [(i["status"], i["message"][:20]) for i in done.response] == [
        (201, "Subject created"),
        (409, "The contact appears "),
        (410, "internalId 'r-a' is "),
        (410, "internalId 'held' al"),
        (400, "contact is required"),
    ]
    found = await users.get_user(ctx, ACTOR, org.organization_id, contact=None, did=None, internal_id="r-a")
    assert found.contacts[0].contact == a and found.id == done.response[0]["user"]["id"]
    assert (
        await users.get_user(ctx, ACTOR, org.organization_id, contact=a.upper(), did=None, internal_id=None)
        == found
    )
    with pytest.raises(NotFound):
        await users.get_user(ctx, ACTOR, org.organization_id, contact=c, did=None, internal_id=None)


async def test_the_call_itself_is_refused_outside_1_to_100_items(ctx: Context, org: Credentials) -> None:
    for count in (0, 101):
        with pytest.raises(Invalid):
            await users.import_users(
                ctx,
                ACTOR,
                org.organization_id,
                [item(mailbox()) for _ in range(count)],
                [],
                rate_per_minute=100,
            )
    with pytest.raises(Invalid):
        await users.get_user(ctx, ACTOR, org.organization_id, contact=None, did=None, internal_id=None)


async def test_imports_count_against_the_rate_and_organizations_are_apart(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    mine, theirs = new_org(engine, cipher, settings), new_org(engine, cipher, settings)
    contact = mailbox()
    made = await users.import_users(ctx, ACTOR, mine.organization_id, [item(contact)], [], rate_per_minute=1)
    with pytest.raises(TooMany):
        await users.import_users(ctx, ACTOR, mine.organization_id, [item(mailbox())], [], rate_per_minute=1)
    did = made.response[0]["user"]["id"]
    for by in ({"contact": contact, "did": None}, {"contact": None, "did": did}):
        with pytest.raises(NotFound):
            await users.get_user(ctx, ACTOR, theirs.organization_id, internal_id=None, **by)
