"""The development pages: the outbox (so a newcomer finishes a flow on one machine) and the
simulated identity provider. They are served only in development (``make run``): a test or
staging installation (``MANDATUM_ENVIRONMENT=test``) holds real people's codes and reset links in
its outbox too, and the simulated provider approves anyone. Tests read the outbox directory
itself (``adapters.delivery.outbox_of``), never through a route."""

from __future__ import annotations

import httpx
import pytest
from temporalio.client import Client

from adapters.delivery import Message, outbox_of
from api.app import create_app
from core.settings import Environment, Settings
from tests.support.api_client import SignedClient, policy_request
from tests.support.development import development_client
from tests.support.journey_messages import message_for

DEV_PATHS = ("/dev/outbox", "/dev/outbox.json", "/dev/kyc/00000000-0000-4000-8000-000000000000")


async def test_the_outbox_shows_the_message_with_its_link(
    api: SignedClient, settings: Settings, temporal: Client
) -> None:
    created = await api.post("/request", policy_request(contacts=["outbox-reader@example.com"]))
    data = created.json()["data"]
    entry = await message_for(data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1])
    async with development_client(settings, temporal) as http:
        listed = await http.get("/dev/outbox.json", params={"to": "outbox-reader@example.com"})
        assert listed.status_code == 200 and listed.headers["cache-control"] == "no-store"
        assert entry.id in [e["id"] for e in listed.json()["data"]]
        assert all(e["to"] == "outbox-reader@example.com" for e in listed.json()["data"])
        page = await http.get("/dev/outbox", params={"to": "outbox-reader@example.com"})
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    link = entry.text.split("https://mandatum.test", 1)[1].split()[0]
    assert f'<a href="https://mandatum.test{link}">' in page.text  # one click to the approval page


@pytest.mark.parametrize("environment", [Environment.TEST, Environment.PRODUCTION])
async def test_no_development_page_outside_development(
    settings: Settings, temporal: Client, worker: None, environment: Environment
) -> None:
    """In test and in production every development route is 404, as if it did not exist: its
    outbox holds codes and reset links, whatever the messages in it."""
    address = f"outbox-{environment.value}@example.com"
    outbox_of(settings).send(Message("email", address, "Reset your password", "a link to keep"))
    assert outbox_of(settings).entries(to=address)  # the outbox has it; no route shows it
    elsewhere = settings.model_copy(update={"environment": environment})
    transport = httpx.ASGITransport(app=create_app(elsewhere, temporal=temporal))
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        for path in DEV_PATHS:
            answer = await client.get(path)
            assert answer.status_code == 404, path
            assert "outbox" not in answer.text.lower(), path
        assert (await client.post(DEV_PATHS[2])).status_code == 404
        assert (await client.get("/dev/outbox.json", params={"to": address})).status_code == 404
