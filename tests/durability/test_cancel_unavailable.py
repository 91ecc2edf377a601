"""Cancel answers 503 (never hangs, never 500) when no worker takes the update in time."""

from __future__ import annotations

import uuid

import httpx
import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.secretbox import SecretCipher
from core.settings import Settings
from orchestration import updates
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request


async def test_cancel_without_worker_is_503_and_changes_nothing(
    settings: Settings,
    engine: Engine,
    cipher: SecretCipher,
    temporal: Client,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lonely = settings.model_copy(update={"task_queue": f"no-worker-{uuid.uuid4().hex[:8]}"})
    monkeypatch.setattr(updates, "UPDATE_TIMEOUT_SECONDS", 1.0)
    app = create_app(lonely, temporal=temporal)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as http:
        api = SignedClient(http, new_org(engine, cipher, settings))
        created = await api.post("/request", policy_request())
        assert created.status_code == 201
        rid = created.json()["data"]["id"]
        body = assert_error_shape(await api.delete(f"/request/{rid}"), 503)
        assert "not confirmed" in body["message"]
        still = (await api.get(f"/request/{rid}")).json()
        assert still["canceledAt"] is None and still["status"] == "PENDING"
    handle = temporal.get_workflow_handle(f"credential-request:{rid}")
    await handle.terminate("test clean-up")
