"""The development pages: the outbox (so a newcomer finishes a flow on one machine) and the
simulated identity provider; neither exists in production."""

from __future__ import annotations

import httpx
from temporalio.client import Client

from api.app import create_app
from core.settings import Environment, Settings
from tests.support.helpers import SignedClient, policy_request
from tests.support.journey_helpers import message_for


async def test_the_outbox_shows_the_message_with_its_link(api: SignedClient, http: httpx.AsyncClient) -> None:
    created = await api.post("/request", policy_request(contacts=["outbox-reader@example.com"]))
    data = created.json()["data"]
    entry = await message_for(data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1])
    listed = await http.get("/dev/outbox.json", params={"to": "outbox-reader@example.com"})
    assert listed.status_code == 200 and listed.headers["cache-control"] == "no-store"
    assert entry.id in [e["id"] for e in listed.json()["data"]]
    assert all(e["to"] == "outbox-reader@example.com" for e in listed.json()["data"])
    page = await http.get("/dev/outbox", params={"to": "outbox-reader@example.com"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    link = entry.text.split("https://mandatum.test", 1)[1].split()[0]
    assert f'<a href="https://mandatum.test{link}">' in page.text  # one click to the approval page


async def test_no_development_page_in_production(settings: Settings, temporal: Client, worker: None) -> None:
    production = settings.model_copy(update={"environment": Environment.PRODUCTION})
    transport = httpx.ASGITransport(app=create_app(production, temporal=temporal))
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        for path in ("/dev/outbox", "/dev/outbox.json", "/dev/kyc/00000000-0000-4000-8000-000000000000"):
            assert (await client.get(path)).status_code == 404, path
        assert (await client.post("/dev/kyc/00000000-0000-4000-8000-000000000000")).status_code == 404
