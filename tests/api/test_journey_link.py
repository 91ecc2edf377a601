"""``GET /request/link/{requestId}``: the subject's approval page for the integrator, to open or
embed (CONTRACT 4 style selectors: exactly one of contact, id, internalId)."""

from __future__ import annotations

from urllib.parse import quote

import httpx
from sqlalchemy import Engine

from store import orgs
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.documents import LEASE, SECRET
from tests.support.journey_messages import _spellings_of, message_for


async def test_the_link_is_the_one_in_the_message(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    created = await api.post(
        "/request",
        policy_request(contacts=[{"contact": "ana@example.com", "internalId": "crm-ana"}, "bea@example.com"]),
    )
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    ana, bea = (s["id"] for s in data["subjects"])
    path = f"/request/link/{data['id']}"
    by_contact = await api.get(path, params={"contact": "ana@example.com"})
    assert by_contact.status_code == 200, by_contact.text
    url = by_contact.json()["data"]["url"]
    entry = await message_for(data["id"], ana.rsplit(":", 1)[1])
    assert url in entry.text and set(by_contact.json()["data"]) == {"url"}
    assert (await api.get(path, params={"id": ana})).json()["data"]["url"] == url
    assert (await api.get(path, params={"internalId": "crm-ana"})).json()["data"]["url"] == url
    assert (await api.get(path, params={"id": bea})).json()["data"]["url"] != url
    assert (await http.get(url.removeprefix("https://mandatum.test"))).status_code == 200

    refused = await api.get(path, params={"contact": "ana@example.com", "parent": "https://app.example.com"})
    assert "allowed iframe origins" in assert_error_shape(refused, 400)["message"]
    orgs.set_frame_origins(
        engine, api.creds.organization_id, ["https://app.example.com"], False, actor="operator:tests"
    )
    framed = await api.get(path, params={"contact": "ana@example.com", "parent": "https://App.example.com/"})
    assert framed.json()["data"]["iframeUrl"] == f"{url}?surface=iframe&parent=https%3A%2F%2Fapp.example.com"
    assert_error_shape(await api.get(path), 400)
    assert_error_shape(await api.get(path, params={"contact": "carl@example.com"}), 404)
    assert_error_shape(await api.get("/request/link/" + "0" * 24, params={"contact": "ana@example.com"}), 404)


async def test_a_document_shows_its_visible_fields_only(api: SignedClient, http: httpx.AsyncClient) -> None:
    created = await api.post(
        "/request", policy_request(contacts=["tenant@example.com"], language="PRT", credentials=[LEASE])
    )
    assert created.status_code == 201, created.text
    data = created.json()["data"]
    url = (await api.get(f"/request/link/{data['id']}", params={"contact": "tenant@example.com"})).json()[
        "data"
    ]["url"]
    page = await http.get(url.removeprefix("https://mandatum.test"))
    assert page.status_code == 200
    for shown in (
        "Contrato de arrendamento",
        "Ação de despejo: cœur, año",
        "Morada",
        "Rua da Conceição 1, Lisboa",
        "Renda mensal",
        "1 250 €",
        "Documento",
    ):
        assert shown in page.text, shown
    assert "IBAN" not in page.text and SECRET not in page.text  # a hidden field stays hidden


async def test_only_the_canonical_spelling_of_a_link_opens_the_page(
    api: SignedClient, http: httpx.AsyncClient
) -> None:
    created = await api.post("/request", policy_request(contacts=["dora@example.com"]))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    url = (await api.get(f"/request/link/{request_id}", params={"contact": "dora@example.com"})).json()[
        "data"
    ]["url"]
    token = url.rsplit("/", 1)[1]
    assert (await http.get(f"/r/{token}")).status_code == 200
    for other in _spellings_of(token):
        page = await http.get("/r/" + quote(other, safe=""))
        assert page.status_code == 404, (other, page.status_code)
