"""API keys in the dashboard: owners and developers create a key (shown once), rotate its secret
and revoke it, each recorded as theirs; the new credentials sign calls at once; support members are
refused the page and every form; a key of another organization is not found; forms need the
session's CSRF token."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from dataclasses import replace

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine

from api.app import create_app
from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import orgs as organizations
from services import webhooks
from services.context import Context
from tests.conftest import new_org
from tests.support.audit_helpers import chain
from tests.support.dashboard import log_in_as, page_client
from tests.support.helpers import Credentials, SignedClient


@pytest_asyncio.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    made = create_app(settings)
    yield made
    made.state.services.engine.dispose()


def _shown(page: str, element: str) -> str:
    found = re.search(rf'id="{element}">([^<]+)<', page)
    assert found, f"no {element} on the page"
    return found.group(1)


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher) -> Context:
    return Context(settings, engine, cipher)


@pytest.mark.parametrize("role", [MemberRole.OWNER, MemberRole.DEVELOPER])
async def test_a_key_is_created_rotated_and_revoked_by_the_member(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, role: MemberRole
) -> None:
    async with page_client(app) as browser, page_client(app) as api_http:
        member_id, csrf = await log_in_as(browser, ctx, org, role, "keys")
        for days in ("0", "-1", "3651", "1e3", "٣", "30 days"):  # not 1 to 3650 ASCII digits
            refused = await browser.post("/dashboard/keys", data={"csrf": csrf, "days": days})
            assert refused.status_code == 400 and "whole number of days" in refused.text, days
        created = await browser.post("/dashboard/keys", data={"csrf": csrf, "days": "30"})
        assert created.status_code == 200 and "shown once" in created.text
        key_id = re.search(r"Key id</dt><dd><code>([0-9a-f]{24})<", created.text)
        assert key_id is not None
        creds = Credentials(
            org.organization_id,
            key_id.group(1),
            _shown(created.text, "api-key"),
            _shown(created.text, "signature-secret"),
            org.did,
        )
        signed = SignedClient(api_http, creds)
        assert (await signed.get("/me")).status_code == 200  # the new key signs at once
        assert "shown once" not in (await browser.get("/dashboard/keys")).text  # never again

        rotated = await browser.post(f"/dashboard/keys/{creds.key_id}/rotate", data={"csrf": csrf})
        assert rotated.status_code == 200 and "previous secret keeps working" in rotated.text
        new_secret = _shown(rotated.text, "signature-secret")
        assert new_secret != creds.secret and 'id="api-key"' not in rotated.text
        renewed = SignedClient(api_http, replace(creds, secret=new_secret))
        assert (await renewed.get("/me")).status_code == 200

        unconfirmed = await browser.post(f"/dashboard/keys/{creds.key_id}/revoke", data={"csrf": csrf})
        assert unconfirmed.status_code == 400 and (await renewed.get("/me")).status_code == 200
        revoked = await browser.post(
            f"/dashboard/keys/{creds.key_id}/revoke", data={"csrf": csrf, "confirm": "yes"}
        )
        assert (revoked.status_code, revoked.headers["location"]) == (303, "/dashboard/keys?notice=revoked")
        assert (await renewed.get("/me")).status_code == 401
        again = await browser.post(f"/dashboard/keys/{creds.key_id}/rotate", data={"csrf": csrf})
        assert again.status_code == 409 and "revoked" in again.text

    records = [(r.type, r.actor, r.data["keyId"]) for r in chain(engine, org.organization_id)]
    assert records == [
        (kind, f"member:{member_id}", creds.key_id)
        for kind in ("API_KEY_CREATED", "API_KEY_ROTATED", "API_KEY_REVOKED")
    ]


async def test_a_support_member_is_refused_every_key_page_and_form(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        assert "API keys" not in (await browser.get("/dashboard")).text  # not offered
        assert (await browser.get("/dashboard/keys")).status_code == 403
        assert (await browser.post("/dashboard/keys", data={"csrf": csrf})).status_code == 403
        for change in ("rotate", "revoke"):
            form = {"csrf": csrf, "confirm": "yes"}
            assert (
                await browser.post(f"/dashboard/keys/{org.key_id}/{change}", data=form)
            ).status_code == 403
    assert chain(engine, org.organization_id) == []  # nothing changed


async def test_another_organizations_key_is_not_found_and_forms_need_the_token(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        page = (await browser.get("/dashboard/keys")).text
        assert org.key_id in page and other.key_id not in page
        for change in ("rotate", "revoke"):
            form = {"csrf": csrf, "confirm": "yes"}
            assert (
                await browser.post(f"/dashboard/keys/{other.key_id}/{change}", data=form)
            ).status_code == 404
        assert (await browser.post(f"/dashboard/keys/{org.key_id}/rotate", data={})).status_code == 403
        for bad in (org.key_id.upper(), org.key_id + "0", "%2e%2e", "x" * 24):  # not a key id
            assert (
                await browser.post(f"/dashboard/keys/{bad}/rotate", data={"csrf": csrf})
            ).status_code == 404
        assert (await browser.post("/dashboard/keys", data={"csrf": "f" * 64})).status_code == 403
        assert (
            await browser.post(f"/dashboard/keys/{org.key_id}/delete", data={"csrf": csrf})
        ).status_code == 404
    assert chain(engine, org.organization_id) == [] and chain(engine, other.organization_id) == []


async def test_no_page_shows_another_organizations_data(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    someone = Actor.operator("tests")
    other_url = f"http://127.0.0.1:9/hooks/{other.organization_id}"
    webhooks.configure(ctx, someone, other.organization_id, other_url)
    event = webhooks.create_test_event(ctx, someone, other.organization_id)
    extra = organizations.create_key(ctx, someone, other.organization_id)  # a record in its trail
    theirs = [other.organization_id, other.key_id, extra.key_id, event.id, other_url]
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        for path in ("/dashboard", "/dashboard/keys", "/dashboard/webhooks"):
            page = await browser.get(path)
            assert page.status_code == 200, path
            assert [value for value in theirs if value in page.text] == [], path
            ours = {"/dashboard": org.organization_id, "/dashboard/keys": org.key_id}.get(path)
            assert ours is None or ours in page.text, path  # the page shows its own organization's
        mine = webhooks.create_test_event(ctx, someone, org.organization_id)
        assert mine.id in (await browser.get("/dashboard/webhooks")).text  # and its own events
