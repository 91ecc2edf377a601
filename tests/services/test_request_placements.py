"""services.requests.create with a DOCUMENT's placements (issue 36): each checked against the
request's contacts and the page count it is given, every problem listed at once, nothing stored
for a refused request; a placement kept with its normalized contact, read back as stored."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import requests
from services.context import Context
from services.errors import Invalid
from services.request_validation import PageCount
from store import request_queries
from tests.support.api_client import Credentials
from tests.support.documents import LEASE
from wire.models import CreateRequestIn, CredentialIn

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")
OPERATOR = Actor.shell_operator("alice")
PLACED = {"contact": "Ana@Example.com", "type": "SIGNATURE", "x": 10, "y": 10, "width": 20, "height": 5}


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher, temporal: Client) -> Context:
    return Context(settings, engine, cipher, temporal)


def body(*placements: dict[str, Any]) -> CreateRequestIn:
    return CreateRequestIn.model_validate(
        {
            "contacts": ["ana@example.com", "+351912345678"],
            "securityLevel": "CONTACT",
            "credentials": [{**copy.deepcopy(LEASE), "placements": list(placements)}],
        }
    )


def pages(count: int, seen: list[tuple[str, str]]) -> PageCount:
    async def page_count(org_name: str, cred: CredentialIn) -> int:
        seen.append((org_name, cred.name))
        return count

    return page_count


async def test_placements_are_checked_and_kept(ctx: Context, engine: Engine, org: Credentials) -> None:
    seen: list[tuple[str, str]] = []
    phone = {**PLACED, "contact": "+351912345678", "type": "DATE", "pageIndex": 1}
    with pytest.raises(Invalid) as refused:
        await requests.create(
            ctx,
            OPERATOR,
            org.organization_id,
            body({**PLACED, "pageIndex": 2}, {**PLACED, "contact": "eve@example.com", "pageIndex": 0}, phone),
            rate_per_minute=100,
            page_count=pages(2, seen),
        )
    assert refused.value.message == [
        "credentials.0.placements.0.pageIndex: page 2 is off the document, whose PDF has 2 pages "
        "(pageIndex counts from 0)",
        "credentials.0.placements.1.contact: eve@example.com is not one of the request's contacts",
    ]
    assert len(seen) == 1 and seen[0][1] == LEASE["name"]  # counted once per credential
    assert request_queries.list_requests(engine, org.organization_id, request_queries.RequestFilter())[1] == 0

    created = await requests.create(
        ctx,
        OPERATOR,
        org.organization_id,
        body({**PLACED, "pageIndex": 1}, phone),
        rate_per_minute=100,
        page_count=pages(2, seen),
    )
    assert created.bundle is not None
    stored = request_queries.get_request(engine, org.organization_id, created.bundle.request.id)
    assert stored is not None
    assert stored.credentials[0].placements == [
        {
            "contact": "ana@example.com",
            "type": "SIGNATURE",
            "x": 10,
            "y": 10,
            "width": 20,
            "height": 5,
            "pageIndex": 1,
        },
        {
            "contact": "+351912345678",
            "type": "DATE",
            "x": 10,
            "y": 10,
            "width": 20,
            "height": 5,
            "pageIndex": 1,
        },
    ]


async def test_without_a_page_count_placements_are_refused(ctx: Context, org: Credentials) -> None:
    with pytest.raises(Invalid, match="placements are taken through the API only"):
        await requests.create(
            ctx, OPERATOR, org.organization_id, body({**PLACED, "pageIndex": 0}), rate_per_minute=100
        )
