"""The portal's pages (issue 32): the cookie's attributes, the code journey with the same answer
for a known and an unknown contact, the list, a mandate's page, the confirmation and the revocation;
every form refused without its CSRF token or from another site; another person's mandate 404."""

from __future__ import annotations

import re

import httpx
import pytest
from fastapi import FastAPI

from core.kinds import CredentialStatus
from services.context import Context
from store.db import read_session
from store.tables import Credential
from tests.support.api_client import Credentials
from tests.support.dashboard import page_client
from tests.support.portal import code_sent_to, issued_to, new_contact, settle

pytestmark = pytest.mark.usefixtures("no_server_errors")
CSRF_RE = re.compile(r'name="csrf" value="([0-9a-f]{64})"')
NONCE_RE = re.compile(r'nonce="[^"]+"')


def csrf_of(page: str) -> str:
    found = CSRF_RE.search(page)
    assert found is not None, page[:500]
    return found.group(1)


async def ask(app: FastAPI, browser: httpx.AsyncClient, contact: str, lang: str = "ENG") -> httpx.Response:
    start = await browser.get(f"/portal?lang={lang}")
    assert start.status_code == 200
    return await browser.post(
        "/portal/code-request", data={"csrf": csrf_of(start.text), "contact": contact, "lang": lang}
    )


async def sign_in(app: FastAPI, browser: httpx.AsyncClient, contact: str) -> str:
    """Signed in as ``contact``; the CSRF token of the list page."""
    asked = await ask(app, browser, contact)
    assert (asked.status_code, asked.headers["location"]) == (303, "/portal/code?lang=ENG")
    await settle(app.state.ctx)
    page = await browser.get("/portal/code?lang=ENG")
    entered = await browser.post(
        "/portal/code", data={"csrf": csrf_of(page.text), "code": await code_sent_to(contact), "lang": "ENG"}
    )
    assert (entered.status_code, entered.headers["location"]) == (303, "/portal?lang=ENG")
    listed = await browser.get("/portal?lang=ENG")
    assert listed.status_code == 200 and "Sign out" in listed.text
    return csrf_of(listed.text)


async def test_the_cookie_is_httponly_strict_secure_and_on_portal_only(app: FastAPI) -> None:
    async with page_client(app) as browser:
        page = await browser.get("/portal")
    cookie = page.headers["set-cookie"].lower()
    assert cookie.startswith("mandatum_portal=")
    for part in ("httponly", "path=/portal", "samesite=strict", "secure", "max-age=3600"):
        assert part in cookie, cookie
    assert "script-src 'nonce-" in page.headers["content-security-policy"] and "<script" not in page.text


async def test_a_known_and_an_unknown_contact_read_the_same(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    known, unknown = new_contact("kn"), new_contact("kn")  # same first letter and domain: same mask
    issued_to(ctx, org.organization_id, known)
    pages = []
    for contact in (known, unknown):
        async with page_client(app) as browser:
            asked = await ask(app, browser, contact)
            page = await browser.get(asked.headers["location"])
            pages.append(
                (
                    asked.status_code,
                    asked.headers["location"],
                    page.status_code,
                    NONCE_RE.sub("", CSRF_RE.sub("", page.text)),
                )
            )
    assert pages[0] == pages[1]
    assert "If mandates were issued to k\u2022\u2022\u2022@example.com" in pages[0][3]
    await settle(app.state.ctx)


async def test_sign_in_list_detail_and_revoke_with_confirmation(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    person = new_contact("flow")
    issued = issued_to(ctx, org.organization_id, person, "Pay the rent each month")
    async with page_client(app) as browser:
        before = browser.cookies.get("mandatum_portal")
        csrf = await sign_in(app, browser, person)
        assert browser.cookies.get("mandatum_portal") != before  # a new token at sign-in
        listed = (await browser.get("/portal?lang=ENG")).text
        assert "Pay the rent each month" in listed and "Active" in listed
        detail = await browser.get(f"/portal/mandates/{issued.credential_id}?lang=PRT")
        assert (
            detail.status_code == 200 and 'lang="pt"' in detail.text and "Revogar este mandato" in detail.text
        )
        confirm = await browser.get(f"/portal/mandates/{issued.credential_id}/revoke?lang=ENG")
        assert confirm.status_code == 200 and "Revoke this mandate?" in confirm.text
        path = f"/portal/mandates/{issued.credential_id}/revoke"
        refused = await browser.post(path, data={"lang": "ENG"})  # no CSRF token
        assert refused.status_code == 403 and "This form has expired" in refused.text
        done = await browser.post(path, data={"csrf": csrf_of(confirm.text), "lang": "ENG"})
        assert done.status_code == 303 and done.headers["location"].endswith("notice=revoked")
        shown = (await browser.get(done.headers["location"])).text
        assert "The mandate is revoked." in shown and "Revoked" in shown
        again = await browser.post(path, data={"csrf": csrf_of(confirm.text), "lang": "ENG"})
        assert again.status_code == 409
        out = await browser.post("/portal/sign-out", data={"csrf": csrf, "lang": "ENG"})
        assert out.status_code == 303
        after = await browser.get(f"/portal/mandates/{issued.credential_id}")
        assert after.status_code == 303 and after.headers["location"] == "/portal?lang=ENG&notice=ended"
    with read_session(ctx.engine) as db:
        row = db.get(Credential, issued.credential_id)
        assert row is not None and row.status == CredentialStatus.REVOKED


async def test_forms_without_csrf_or_from_another_site_are_refused(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    person = new_contact("csrf")
    issued = issued_to(ctx, org.organization_id, person)
    async with page_client(app) as browser:
        start = await browser.get("/portal")
        token = csrf_of(start.text)
        missing = await browser.post("/portal/code-request", data={"contact": person})
        assert missing.status_code == 403
        cross = await browser.post(
            "/portal/code-request",
            data={"csrf": token, "contact": person},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        assert cross.status_code == 403
        csrf = await sign_in(app, browser, person)
        cross_revoke = await browser.post(
            f"/portal/mandates/{issued.credential_id}/revoke",
            data={"csrf": csrf},
            headers={"Sec-Fetch-Site": "cross-site"},
        )
        assert cross_revoke.status_code == 403
    with read_session(ctx.engine) as db:
        row = db.get(Credential, issued.credential_id)
        assert row is not None and row.status == CredentialStatus.ACTIVE


async def test_another_persons_mandate_and_bad_ids_are_404(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    person, stranger = new_contact("own"), new_contact("other")
    issued_to(ctx, org.organization_id, person)
    theirs = issued_to(ctx, org.organization_id, stranger)
    async with page_client(app) as browser:
        csrf = await sign_in(app, browser, person)
        for bad in (theirs.credential_id, "0" * 24, "%3Cscript%3E", "x" * 300):
            assert (await browser.get(f"/portal/mandates/{bad}")).status_code == 404
        post = await browser.post(f"/portal/mandates/{theirs.credential_id}/revoke", data={"csrf": csrf})
        assert post.status_code == 404
    with read_session(ctx.engine) as db:
        row = db.get(Credential, theirs.credential_id)
        assert row is not None and row.status == CredentialStatus.ACTIVE


async def test_wrong_codes_are_counted_then_locked_and_bad_input_refused(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    person = new_contact("wrong")
    issued_to(ctx, org.organization_id, person)
    async with page_client(app) as browser:
        bad = await ask(app, browser, "not-a-contact", "SPA")
        assert bad.status_code == 400 and "formato internacional" in bad.text
        await ask(app, browser, person)
        await settle(app.state.ctx)
        code = await code_sent_to(person)
        wrong = f"{(int(code) + 1) % 10**6:06d}"
        page = await browser.get("/portal/code")
        texts = []
        for _ in range(5):
            answer = await browser.post("/portal/code", data={"csrf": csrf_of(page.text), "code": wrong})
            assert answer.status_code == 400
            texts.append(answer.text)
        assert "Tries left: 4." in texts[0] and "this code is locked" in texts[4]
        locked = await browser.post("/portal/code", data={"csrf": csrf_of(page.text), "code": code})
        assert locked.status_code == 400 and "this code is locked" in locked.text
        short = await browser.post("/portal/code", data={"csrf": csrf_of(page.text), "code": "12"})
        assert short.status_code == 400 and "Enter the 6 digits" in short.text
