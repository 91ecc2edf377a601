"""GET /request/{id} links a request sent again both ways (issue 32): ``resentAs`` on the old one,
``resentFrom`` on the new one, in 2026-11-01; older versions' shapes are unchanged."""

from __future__ import annotations

from sqlalchemy import Engine
from temporalio.client import Client

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import request_resend
from services.context import Context
from tests.support.api_client import Credentials, SignedClient, policy_request


async def test_the_detail_links_both_ways_in_the_newest_version_only(
    api: SignedClient,
    org: Credentials,
    settings: Settings,
    engine: Engine,
    cipher: SecretCipher,
    temporal: Client,
) -> None:
    created = await api.post("/request", policy_request())
    assert created.status_code == 201, created.text
    old_id = created.json()["data"]["id"]
    assert (await api.delete(f"/request/{old_id}")).status_code == 200
    ctx = Context(settings, engine, cipher, temporal)
    new = await request_resend.send_again(
        ctx, Actor.shell_operator("olga"), org.organization_id, old_id, "typo"
    )
    newest = {"API-Version": "2026-11-01"}
    old = (await api.get(f"/request/{old_id}", headers=newest)).json()
    again = (await api.get(f"/request/{new.request.id}", headers=newest)).json()
    assert (old["resentFrom"], old["resentAs"], old["status"]) == (None, new.request.id, "CANCELED")
    assert (again["resentFrom"], again["resentAs"], again["status"]) == (old_id, None, "PENDING")
    for version in ("2026-09-01", "2026-05-20"):
        shown = (await api.get(f"/request/{old_id}", headers={"API-Version": version})).json()
        body = shown.get("data", shown)
        assert "resentAs" not in body and "resentFrom" not in body, version
