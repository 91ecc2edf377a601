"""Several webhook endpoints in the dashboard (issue 34, item 5): both listed (URL without its
query, description, on or off), each one's page changes that one alone (URL, on or off, a
rotation), removal needs its box ticked, and another organization's endpoint is not found
whatever is asked of it."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator

import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from store import webhooks as store
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.dashboard import log_in_as, page_client

pytestmark = pytest.mark.usefixtures("no_server_errors")


@pytest_asyncio.fixture
async def app(settings: Settings, temporal: Client, worker: None) -> AsyncIterator[FastAPI]:
    made = create_app(settings, temporal=temporal)
    yield made
    made.state.ctx.engine.dispose()


def _rows(page: str) -> list[str]:
    """The endpoints table's rows, unescaped."""
    table = re.search(r'<table class="stack" id="endpoints">(.*?)</table>', page, re.S)
    assert table, "no endpoints table"
    return [html.unescape(r) for r in re.findall(r"<tr>.*?</tr>", table[1], re.S)[1:]]


async def test_two_endpoints_each_changed_on_its_own_page(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher
) -> None:
    org_id = org.organization_id
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        ids = []
        for url, description in (
            ("https://a.example/hooks?token=first-receivers-secret", "Billing"),
            ("https://b.example/in", ""),
        ):
            added = await browser.post(
                "/dashboard/webhooks/add", data={"csrf": csrf, "url": url, "description": description}
            )
            assert added.status_code == 303, added.text[-500:]
            ids.append(added.headers["location"].split("/")[-1].split("?")[0])
            assert "shown once" in (await browser.get(added.headers["location"])).text
        first, second = ids
        listed = await browser.get("/dashboard/webhooks")
        rows = _rows(listed.text)
        assert len(rows) == 2 and "first-receivers-secret" not in listed.text  # the query is not shown
        assert (
            "https://a.example/hooks" in rows[0]
            and "Billing" in rows[0]
            and f"/dashboard/webhooks/{first}" in rows[0]
        )
        assert "https://b.example/in" in rows[1] and '<td data-label="State">on</td>' in rows[1]

        # the first one's URL and description: the second stays as it was
        changed = await browser.post(
            f"/dashboard/webhooks/{first}",
            data={"csrf": csrf, "url": "https://a.example/v2", "description": "Billing v2"},
        )
        assert (changed.status_code, changed.headers["location"]) == (
            303,
            f"/dashboard/webhooks/{first}?notice=saved",
        )
        a, b = webhooks.settings_row(ctx, org_id, first), webhooks.settings_row(ctx, org_id, second)
        assert a is not None and (a.url, a.description) == ("https://a.example/v2", "Billing v2")
        assert b is not None and (b.url, b.description) == ("https://b.example/in", None)
        refused = await browser.post(
            f"/dashboard/webhooks/{first}",
            data={"csrf": csrf, "url": "ftp://a.example/x", "description": "kept"},
        )
        assert refused.status_code == 400 and 'value="ftp://a.example/x"' in refused.text
        assert 'value="kept"' in refused.text

        # the second one turned off, then rotated: the first is untouched
        off = await browser.post(f"/dashboard/webhooks/{second}/delivery", data={"csrf": csrf, "events": []})
        assert off.status_code == 400  # no type ticked: "turn it off" means the box, with the types
        every = list(webhooks.EVENT_TYPES)
        off = await browser.post(
            f"/dashboard/webhooks/{second}/delivery", data={"csrf": csrf, "events": every}
        )
        assert off.status_code == 303
        before = store.get_config(engine, cipher, org_id, first)
        rotated = await browser.post(
            f"/dashboard/webhooks/{second}/rotate", data={"csrf": csrf, "overlap": "2"}
        )
        assert rotated.headers["location"] == f"/dashboard/webhooks/{second}?notice=rotated"
        shown = (await browser.get(rotated.headers["location"])).text
        new_secret = _secret(shown)
        assert "X-Signature-Next" in shown and 'id="overlap"' in shown
        b_now = store.get_config(engine, cipher, org_id, second)
        assert b_now is not None and (b_now.enabled, b_now.signature_secret) == (False, new_secret)
        assert store.get_config(engine, cipher, org_id, first) == before
        bad_overlap = await browser.post(
            f"/dashboard/webhooks/{second}/rotate", data={"csrf": csrf, "overlap": "999"}
        )
        assert bad_overlap.status_code == 400 and 'value="999"' in bad_overlap.text

        # removal: refused without the box, done with it; the other stays
        unconfirmed = await browser.post(f"/dashboard/webhooks/{first}/remove", data={"csrf": csrf})
        assert unconfirmed.status_code == 400 and "Tick the box" in unconfirmed.text
        assert webhooks.settings_row(ctx, org_id, first) is not None
        removed = await browser.post(
            f"/dashboard/webhooks/{first}/remove", data={"csrf": csrf, "confirm": "yes"}
        )
        assert (removed.status_code, removed.headers["location"]) == (
            303,
            "/dashboard/webhooks?notice=removed",
        )
        assert [r.id for r in webhooks.endpoints(ctx, org_id)] == [second]
        assert (await browser.get(f"/dashboard/webhooks/{first}")).status_code == 404
        assert len(_rows((await browser.get("/dashboard/webhooks?notice=removed")).text)) == 1


def _secret(page: str) -> str:
    found = re.search(r'id="secret-signature-secret">([^<]+)<', page)
    assert found, "no signature secret shown"
    return found[1]


async def test_another_organizations_endpoint_is_not_found(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    theirs = webhooks.add_endpoint(
        ctx, Actor.shell_operator("setup"), org.organization_id, "https://theirs.example/hooks", "Theirs"
    ).endpoint_id
    before = store.get_config(engine, cipher, org.organization_id, theirs)
    stranger = new_org(engine, cipher, settings)
    page_of = f"/dashboard/webhooks/{theirs}"
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, stranger, MemberRole.OWNER, "stranger")
        seen = await browser.get(page_of)
        assert seen.status_code == 404 and "theirs.example" not in seen.text
        assert "theirs.example" not in (await browser.get("/dashboard/webhooks")).text
        form = {"csrf": csrf, "url": "https://mine.example/h", "new_secrets": "yes", "confirm": "yes"}
        for path in (page_of, *(f"{page_of}/{what}" for what in ("delivery", "rotate", "test", "remove"))):
            refused = await browser.post(path, data={**form, "events": ["credential"]})
            assert refused.status_code == 404 and "theirs.example" not in refused.text, path
        for path in ("/dashboard/webhooks/0123456789abcdef", f"/dashboard/webhooks/{theirs.upper()}"):
            assert (await browser.get(path)).status_code == 404, path
            assert (await browser.post(f"{path}/remove", data=form)).status_code == 404, path
        replayed = await browser.post(
            "/dashboard/events/replay",
            data={"csrf": csrf, "dateFrom": "2026-01-01", "dateTo": "2026-01-01", "endpointId": theirs},
        )
        assert replayed.status_code == 400 and "no such endpoint" in replayed.text
    assert store.get_config(engine, cipher, org.organization_id, theirs) == before  # nothing changed
    assert store.list_events(engine, org.organization_id) == []
    assert webhooks.endpoints(ctx, stranger.organization_id) == []
