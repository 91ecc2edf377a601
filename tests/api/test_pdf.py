"""PDF rendering cannot starve other callers (issue 12, item 1): a document's size is bounded at
creation, a PDF is rendered once and kept until what it shows changes, and renderings run on a
bounded pool of their own, so other requests keep being answered while they are busy."""

from __future__ import annotations

import asyncio
import base64
import math
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, select
from sqlmodel import col

from api import pdf
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from store.pdfs import kept_pdf
from store.tables import CredentialPdf
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.documents import LEASE, pdf_text
from tests.support.mandates import accept_all, create_request

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


def document(items: int = 1, value: str = "v", label: str = "Item") -> dict[str, Any]:
    return {
        "type": "DOCUMENT",
        "name": "Contract",
        "data": [
            {"label": f"{label} {i}", "type": "text", "value": value, "hidden": False} for i in range(items)
        ],
    }


def lines(resp: Any) -> list[str]:
    message = assert_error_shape(resp, 400)["message"]
    return [message] if isinstance(message, str) else list(message)


# --- bounds at creation ---------------------------------------------------------------------------


async def test_a_document_with_too_many_items_is_refused(api: SignedClient) -> None:
    [line] = lines(await api.post("/request", policy_request(credentials=[document(items=51)])))
    assert line.startswith("credentials.0.data: ") and "50" in line, line
    assert (await api.post("/request", policy_request(credentials=[document(items=50)]))).status_code == 201


async def test_a_document_with_too_long_a_value_is_refused(api: SignedClient) -> None:
    [line] = lines(await api.post("/request", policy_request(credentials=[document(value="x" * 5_001)])))
    assert line.startswith("credentials.0.data.0.value: ") and "5000" in line, line


async def test_a_document_with_too_much_text_in_all_is_refused(api: SignedClient) -> None:
    # 5 items of 4,000 characters each are within the per-item limit, 20,030 characters in all are not
    [line] = lines(await api.post("/request", policy_request(credentials=[document(5, "x" * 4_000)])))
    assert line == (
        "credentials.0: data holds 20030 characters of labels and values; a document holds at most 20000"
    ), line
    ok = await api.post("/request", policy_request(credentials=[document(5, "x" * 3_990)]))
    assert ok.status_code == 201, ok.text


# --- rendered once, kept while it is right --------------------------------------------------------


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The credential id of every real rendering."""
    calls: list[str] = []
    real = pdf.render

    def render(sheet: pdf.CredentialSheet, font: Any = "auto") -> bytes:
        calls.append(sheet.credential_id)
        return real(sheet, font)

    monkeypatch.setattr(pdf, "render", render)
    return calls


async def get_pdf(api: SignedClient, ident: str) -> str:
    resp = await api.get(f"/credential/{quote(ident, safe='')}", params={"includePdf": "true"})
    assert resp.status_code == 200, resp.text
    return str(resp.json()["pdf"])


async def test_a_pdf_is_rendered_once_and_again_after_a_revocation(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    counted: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    request = await create_request(api, credentials=[LEASE])
    cred_id = request["credentials"][0]["id"]
    [issued] = await accept_all(api, temporal, request)
    first, second = await get_pdf(api, cred_id), await get_pdf(api, issued["id"])
    assert first == second and counted == [cred_id]
    parallel = await asyncio.gather(*(get_pdf(api, cred_id) for _ in range(6)))
    assert set(parallel) == {first} and counted == [cred_id]
    # another API process (a renderer with nothing in memory) serves the one kept in the database
    monkeypatch.setattr(pdf, "RENDERER", pdf.Renderer())
    assert await get_pdf(api, cred_id) == first and counted == [cred_id]
    with engine.connect() as conn:
        [(kept_digest,)] = conn.execute(
            select(col(CredentialPdf.content_digest)).where(col(CredentialPdf.credential_id) == cred_id)
        ).all()
    assert kept_pdf(engine, cred_id, kept_digest) == base64.b64decode(first)

    revoked = await api.post(f"/credential/{quote(issued['id'], safe='')}/revoke", {"reason": "moved out"})
    assert revoked.status_code == 200, revoked.text
    after = await get_pdf(api, cred_id)
    assert counted == [cred_id, cred_id]  # the revocation changed what it shows: rendered anew
    assert "REVOKED" in pdf_text(after) and "reason: moved out" in pdf_text(after)
    assert "REVOKED" not in pdf_text(first)
    assert await get_pdf(api, cred_id) == after and len(counted) == 2
    assert kept_pdf(engine, cred_id, kept_digest) is None  # the revoked content has another digest
    monkeypatch.setattr(pdf, "RENDERER", pdf.Renderer())
    assert await get_pdf(api, cred_id) == after and len(counted) == 2


# --- bounded concurrency --------------------------------------------------------------------------


async def until(condition: Callable[[], bool]) -> None:
    while True:
        if condition():
            return
        await asyncio.sleep(0.01)


@pytest.fixture
def held(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[threading.Event, list[str]]]:
    """Renderings that block until the event is set (always set at the end of the test)."""
    release, started = threading.Event(), []

    def render(sheet: pdf.CredentialSheet, font: Any = "auto") -> bytes:
        started.append(sheet.credential_id)
        release.wait(60)
        return b"%PDF-1.4 held"

    monkeypatch.setattr(pdf, "render", render)
    yield release, started
    release.set()


async def test_busy_renderers_do_not_stop_another_organizations_calls(
    api: SignedClient,
    http: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    held: tuple[threading.Event, list[str]],
) -> None:
    release, started = held
    # more renderings than the default thread pool (which every database call shares) has threads
    wanted = min(32, (os.cpu_count() or 1) + 4) + 2
    cred_ids: list[str] = []
    for _ in range(math.ceil(wanted / 10)):
        made = await create_request(api, credentials=[document() for _ in range(10)])
        cred_ids += [c["id"] for c in made["credentials"]]
    other = SignedClient(http, new_org(engine, cipher, settings))
    assert (await other.post("/request", policy_request())).status_code == 201

    renders = [
        asyncio.create_task(api.get(f"/credential/{c}", params={"includePdf": "true"})) for c in cred_ids
    ]
    refused_count = len(cred_ids) - pdf.RENDER_WORKERS - pdf.RENDER_WAITING
    try:
        async with asyncio.timeout(20):
            await until(lambda: len(started) >= pdf.RENDER_WORKERS)  # the renderers are busy now
            listed = await other.get("/request")
            assert listed.status_code == 200 and len(listed.json()["data"]) == 1
            first_answers = asyncio.as_completed(renders)
            for _ in range(refused_count):
                resp = await next(first_answers)
                assert assert_error_shape(resp, 503)["message"] == "PDF rendering is busy; retry shortly"
                assert resp.headers["Retry-After"] == "5"
    finally:
        release.set()
    answered = await asyncio.gather(*renders)
    assert sum(r.status_code == 200 for r in answered) == pdf.RENDER_WORKERS + pdf.RENDER_WAITING
    assert len(started) == pdf.RENDER_WORKERS + pdf.RENDER_WAITING


def test_every_credential_status_has_its_words_on_the_pdf() -> None:
    """A status added to ``core.kinds`` without words would print as its bare spelling."""
    assert set(pdf.STATUS_WORDS) == set(CredentialStatus)
    assert all(words and words[0].islower() for words in pdf.STATUS_WORDS.values())
