"""services.audit: an organization's records read through the service, and the chains checked by
a named actor (the trail names who did what: ``operator:`` and ``apiKey:`` actors among them)."""

from __future__ import annotations

from sqlalchemy import Engine

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import audit, mandates
from services.context import Context
from store.audit_queries import ActivityFilter
from tests.support.api_client import Credentials
from tests.support.audit import issued_mandate


async def test_the_trail_names_each_actor_and_its_chain_checks(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    await mandates.revoke(ctx, Actor.shell_operator("frank"), org.organization_id, issued.mandate_id, None)
    rows, pages = await audit.activity(ctx, org.organization_id, ActivityFilter(), 0, 50)
    assert pages == 1
    assert [(r.type, r.actor) for r in rows][:2] == [
        ("MANDATE_REVOKED", "operator:frank"),
        ("MANDATE_ISSUED", "temporal"),
    ]
    (check,) = audit.verify_chains(ctx, Actor.shell_operator("frank"), org.organization_id)
    assert check.broken is None and check.records == len(rows)
