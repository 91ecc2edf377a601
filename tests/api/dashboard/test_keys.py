"""API keys in the dashboard: owners and developers create a key (shown once) with a name and a
description, rename it, rotate its secret and revoke it, each recorded as theirs; a name that is
empty, too long or not one line of printable text is refused with the reason and nothing made; the
new credentials sign calls at once, and the key's row shows when it last did, to the minute; support
members are refused the page and every form; a key of another organization is not found; forms need
the session's CSRF token."""

from __future__ import annotations

import html
import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import orgs as organizations
from services import webhooks
from services.context import Context
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client


def _shown(page: str, element: str) -> str:
    found = re.search(rf'id="{element}">([^<]+)<', page)
    assert found, f"no {element} on the page"
    return found.group(1)


async def _followed(browser: Any, posted: Any) -> Any:
    """A form that makes a secret answers 303 to the keys page, which shows it (once)."""
    assert (posted.status_code, posted.headers["location"]) == (303, "/dashboard/keys"), posted.text[:300]
    return await browser.get(posted.headers["location"])


def _key_records(engine: Engine, org: Credentials) -> list[Any]:
    """The organization's audit records of its API keys (inviting its members writes others)."""
    return [r for r in chain(engine, org.organization_id) if r.type.startswith("API_KEY_")]


@pytest.mark.parametrize("role", [MemberRole.OWNER, MemberRole.DEVELOPER])
async def test_a_key_is_created_rotated_and_revoked_by_the_member(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, role: MemberRole
) -> None:
    async with page_client(app) as browser, page_client(app) as api_http:
        member_id, csrf = await log_in_as(browser, ctx, org, role, "keys")
        for days in ("0", "-1", "3651", "1e3", "٣", "30 days"):  # not 1 to 3650 ASCII digits
            refused = await browser.post("/dashboard/keys", data={"csrf": csrf, "days": days})
            assert refused.status_code == 400 and "whole number of days" in refused.text, days
        form = {"csrf": csrf, "days": "30", "name": "  Billing service  ", "description": "Nightly invoices"}
        created = await _followed(browser, await browser.post("/dashboard/keys", data=form))
        assert created.status_code == 200 and "shown once" in created.text
        assert (_shown(created.text, "issued-name"), _shown(created.text, "issued-description")) == (
            "Billing service",  # trimmed
            "Nightly invoices",
        )
        creds = Credentials(
            org.organization_id,
            _shown(created.text, "key-id"),
            _shown(created.text, "api-key"),
            _shown(created.text, "signature-secret"),
            org.did,
        )
        signed = SignedClient(api_http, creds)
        assert (await signed.get("/me")).status_code == 200  # the new key signs at once
        assert "shown once" not in (await browser.get("/dashboard/keys")).text  # never again

        rotated = await _followed(
            browser, await browser.post(f"/dashboard/keys/{creds.key_id}/rotate", data={"csrf": csrf})
        )
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

    records = [(r.type, r.actor, r.data["keyId"], r.data["name"]) for r in _key_records(engine, org)]
    assert records == [
        (kind, f"member:{member_id}", creds.key_id, "Billing service")
        for kind in ("API_KEY_CREATED", "API_KEY_ROTATED", "API_KEY_REVOKED")
    ]


async def test_a_support_member_is_refused_every_key_page_and_form(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        assert "API keys" not in (await browser.get("/dashboard")).text  # not offered
        assert (await browser.get("/dashboard/keys")).status_code == 403
        assert (await browser.post("/dashboard/keys", data={"csrf": csrf, "name": "x"})).status_code == 403
        for change in ("rotate", "revoke", "edit"):
            form = {"csrf": csrf, "confirm": "yes", "name": "Taken over"}
            assert (
                await browser.post(f"/dashboard/keys/{org.key_id}/{change}", data=form)
            ).status_code == 403
    assert _key_records(engine, org) == []  # nothing changed


async def test_another_organizations_key_is_not_found_and_forms_need_the_token(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        page = (await browser.get("/dashboard/keys")).text
        assert org.key_id in page and other.key_id not in page
        for change in ("rotate", "revoke", "edit"):
            form = {"csrf": csrf, "confirm": "yes", "name": "Taken over"}
            assert (
                await browser.post(f"/dashboard/keys/{other.key_id}/{change}", data=form)
            ).status_code == 404
        assert (await browser.post(f"/dashboard/keys/{org.key_id}/rotate", data={})).status_code == 403
        for bad in (org.key_id.upper(), org.key_id + "0", "%2e%2e", "x" * 24):  # not a key id
            for change in ("rotate", "edit"):
                assert (
                    await browser.post(f"/dashboard/keys/{bad}/{change}", data={"csrf": csrf, "name": "x"})
                ).status_code == 404
        assert (await browser.post("/dashboard/keys", data={"csrf": "f" * 64})).status_code == 403
        assert (
            await browser.post(f"/dashboard/keys/{org.key_id}/delete", data={"csrf": csrf})
        ).status_code == 404
    assert _key_records(engine, org) == [] and _key_records(engine, other) == []


async def test_no_page_shows_another_organizations_data(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    someone = Actor.shell_operator("tests")
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


def _row(page: str, key_id: str) -> str:
    """The keys table's row of ``key_id``, its HTML unescaped."""
    rows = [r for r in re.findall(r"<tr>.*?</tr>", page, re.S) if f"<code>{key_id}</code>" in r]
    assert len(rows) == 1, f"no row of {key_id}"
    return html.unescape(rows[0])


def _cell(row: str, label: str) -> str:
    found = re.search(rf'data-label="{label}"[^>]*>(.*?)</td>', row, re.S)
    assert found, f"no {label} in the row"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", found.group(1))).strip()


REFUSED_LABELS = [
    ({"name": ""}, "The key's name is 1 to 80 characters (it has 0)."),
    ({"name": "   "}, "The key's name is 1 to 80 characters (it has 0)."),
    ({"name": "n" * 81}, "The key's name is 1 to 80 characters (it has 81)."),
    ({"name": "bell\x07key"}, "The key's name must be one line of printable characters: it holds U+0007."),
    ({"name": "two\nlines"}, "The key's name must be one line of printable characters: it holds U+000A."),
    ({"name": "\u202eyek"}, "The key's name must be one line of printable characters: it holds U+202E."),
    ({"name": "ok", "description": "d" * 501}, "The description is at most 500 characters (it has 501)."),
    (
        {"name": "ok", "description": "a\r\nb"},
        "The description must be one line of printable characters: it holds U+000D, U+000A.",
    ),
]


async def test_a_key_needs_a_printable_name_of_1_to_80_characters(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "developer")
        for fields, reason in REFUSED_LABELS:
            refused = await browser.post("/dashboard/keys", data={"csrf": csrf, **fields})
            assert refused.status_code == 400, fields
            assert reason in html.unescape(refused.text), (fields, refused.text)
            assert "shown once" not in refused.text
        both = await browser.post("/dashboard/keys", data={"csrf": csrf, "name": "", "description": "x\x00"})
        assert both.status_code == 400 and "it has 0" in html.unescape(both.text)
        assert "it holds U+0000" in html.unescape(both.text)  # every problem at once
        # the form keeps what was typed, so the member corrects it instead of typing it again
        typed = await browser.post(
            "/dashboard/keys", data={"csrf": csrf, "name": "n" * 81, "description": "kept", "days": "7"}
        )
        assert f'value="{"n" * 81}"' in typed.text and 'value="kept"' in typed.text
        assert 'value="7"' in typed.text
        page = (await browser.get("/dashboard/keys")).text
    assert [k.id for k in organizations.list_keys(ctx, org.organization_id)] == [org.key_id]  # none made
    assert _key_records(engine, org) == []
    first = _row(page, org.key_id)  # the organization's first key is unnamed, and says so
    assert _cell(first, "Key").startswith("(unnamed) " + org.key_id) and _cell(first, "Last used") == "never"
    assert "to the minute" in page


async def test_a_key_is_renamed_and_described_by_the_member(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        edit = f"/dashboard/keys/{org.key_id}/edit"
        saved = await browser.post(edit, data={"csrf": csrf, "name": " CI runner ", "description": "GitHub"})
        assert (saved.status_code, saved.headers["location"]) == (303, "/dashboard/keys?notice=edited")
        page = await browser.get(saved.headers["location"])
        assert "name and description are saved" in html.unescape(page.text)
        assert _cell(_row(page.text, org.key_id), "Key").startswith(f"CI runner GitHub {org.key_id}")
        again = await browser.post(edit, data={"csrf": csrf, "name": "CI runner", "description": "GitHub"})
        assert again.status_code == 303  # the same label: nothing changes, nothing is recorded
        bad = await browser.post(edit, data={"csrf": csrf, "name": "x" * 81, "description": "typed"})
        assert bad.status_code == 400 and "1 to 80 characters" in html.unescape(bad.text)
        assert re.search(r"<details class=\"edit keyform\" open>", bad.text)  # its form, open, as typed
        assert f'value="{"x" * 81}"' in bad.text and 'value="typed"' in bad.text
        assert (await browser.post(edit, data={"csrf": "f" * 64, "name": "Stolen"})).status_code == 403
    (key,) = organizations.list_keys(ctx, org.organization_id)
    assert (key.name, key.description) == ("CI runner", "GitHub")
    records = [(r.type, r.actor, r.data) for r in _key_records(engine, org)]
    data = {"keyId": org.key_id, "name": "CI runner", "expiresAt": None, "description": "GitHub"}
    previous = {"name": "", "description": ""}  # the first key was unnamed
    assert records == [("API_KEY_EDITED", f"member:{member_id}", {**data, "previous": previous})]


async def test_last_used_shows_never_then_the_minute_of_a_signed_call(
    app: FastAPI, ctx: Context, org: Credentials, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_use = app.state.authenticator.key_use
    moment = datetime(2026, 11, 24, 18, 41, 37, 250_000, tzinfo=UTC)
    monkeypatch.setattr(key_use, "clock", lambda: moment)
    async with page_client(app) as browser, page_client(app) as api_http:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        created = await _followed(
            browser, await browser.post("/dashboard/keys", data={"csrf": csrf, "name": "Reports"})
        )
        key_id = _shown(created.text, "key-id")
        row = _row(created.text, key_id)
        assert _cell(row, "Key").startswith(f"Reports {key_id}") and _cell(row, "Last used") == "never"
        creds = Credentials(
            org.organization_id,
            key_id,
            _shown(created.text, "api-key"),
            _shown(created.text, "signature-secret"),
            org.did,
        )
        assert (await SignedClient(api_http, creds).get("/me")).status_code == 200
        await key_use.flush()
        page = (await browser.get("/dashboard/keys")).text
    assert _cell(_row(page, key_id), "Last used") == "2026-11-24 18:41 UTC"
    assert _cell(_row(page, org.key_id), "Last used") == "never"  # the other key signed nothing


async def test_reloading_after_a_new_key_makes_no_second_key(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """Issue 34: the form answers with a redirect, so a reload (of the page it leads to) neither
    makes a key nor shows the secret again; the secret reaches only the member who made it, and
    a forged or another member's sealed cookie shows nothing."""
    async with page_client(app) as browser, page_client(app) as other:
        await log_in_as(other, ctx, org, MemberRole.OWNER, "other-owner")
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        before = len([r for r in _key_records(engine, org) if r.type == "API_KEY_CREATED"])
        posted = await browser.post("/dashboard/keys", data={"csrf": csrf, "name": "Once"})
        sealed = posted.cookies.get("mandatum_issued_key")
        assert sealed and "Once" not in sealed and "mdt_" not in sealed  # encrypted
        cookie = posted.headers["set-cookie"].lower()
        assert "httponly" in cookie and "path=/dashboard/keys" in cookie and "samesite=strict" in cookie
        shown = await _followed(browser, posted)
        secret = _shown(shown.text, "signature-secret")
        assert "shown once" in shown.text
        assert (
            "max-age=0" in shown.headers["set-cookie"].lower()
            or "expires=" in shown.headers["set-cookie"].lower()
        )
        for _ in range(2):  # reloads
            again = await browser.get("/dashboard/keys")
            assert again.status_code == 200 and "shown once" not in again.text and secret not in again.text
        made = [r for r in _key_records(engine, org) if r.type == "API_KEY_CREATED"]
        assert len(made) == before + 1
        # the sealed cookie replayed by another member of the organization: shown to nobody else
        stolen = await _with_issued_cookie(other, sealed)
        assert secret not in stolen.text and "shown once" not in stolen.text
        forged = await _with_issued_cookie(browser, "A" * 80)
        assert forged.status_code == 200 and "shown once" not in forged.text


async def _with_issued_cookie(client: httpx.AsyncClient, value: str) -> httpx.Response:
    """``GET /dashboard/keys`` carrying ``value`` as the sealed key cookie beside the client's own
    (in its jar for this one request: httpx deprecates per-request cookies)."""
    client.cookies.set("mandatum_issued_key", value, path="/dashboard/keys")
    try:
        return await client.get("/dashboard/keys")
    finally:
        client.cookies.delete("mandatum_issued_key", path="/dashboard/keys")
