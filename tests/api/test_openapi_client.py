"""A client generated from the OpenAPI document by openapi-python-client (``make install`` puts the
generator in ``.venv/tools``) runs create, list, get, presentation, verify and revoke against the
app, its only addition a signing hook: the typed answers parse, and the signed documents survive the
typed models unchanged (the VP verifies, the receipts check)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from api.signing import sign
from core.settings import Settings
from orchestration.temporal import request_handle
from store.keys import did_resolver
from tests.support.api_client import Credentials, policy_request
from tests.support.presentations import GOOD
from tests.support.workflow import decide, subject_uuid
from trust.did import web_service_did
from trust.receipts import verify_receipt

GENERATOR = Path(sys.prefix) / "tools" / "openapi-python-client" / "bin" / "openapi-python-client"
PACKAGE = "mandatum_generated_client"
CONFIG = {
    "post_hooks": [],  # no formatter: the code is imported, not read
    "content_type_overrides": {
        "application/vc": "application/json",  # the status list credential
        "application/pdf": "application/octet-stream",  # a DOCUMENT approval's PDF, as a file
    },
}

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory, settings: Settings) -> Iterator[ModuleType]:
    """The generated client package, imported from a temporary directory."""
    if not GENERATOR.exists():
        pytest.skip(f"{GENERATOR} is missing: make install builds it (make tools)")
    where = tmp_path_factory.mktemp("generated")
    app = create_app(settings)
    (where / "openapi.json").write_text(json.dumps(app.openapi()))
    app.state.ctx.engine.dispose()
    (where / "config.json").write_text(json.dumps(CONFIG))
    done = subprocess.run(
        [
            str(GENERATOR),
            "generate",
            "--path",
            "openapi.json",
            "--config",
            "config.json",
            "--meta",
            "none",
            "--output-path",
            PACKAGE,
            "--fail-on-warning",
        ],
        cwd=where,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    sys.path.insert(0, str(where))
    try:
        yield importlib.import_module(PACKAGE)
    finally:
        sys.path.remove(str(where))
        for name in [m for m in sys.modules if m == PACKAGE or m.startswith(PACKAGE + ".")]:
            del sys.modules[name]


def signing_hook(creds: Credentials) -> Callable[[httpx.Request], Awaitable[None]]:
    """What an integrator adds to the generated client: X-Timestamp and X-Signature over the bytes
    the client sends (``api.signing``, CONTRACT 1). A fresh millisecond per call: a write's
    signature is accepted once."""
    last = 0

    async def signed(request: httpx.Request) -> None:
        nonlocal last
        last = max(last + 1, int(time.time() * 1000))
        request.headers["X-Timestamp"] = str(last)
        request.headers["X-Signature"] = sign(creds.secret, str(last), request.content)

    return signed


def client_for(generated: ModuleType, app: FastAPI, creds: Credentials) -> Any:
    return generated.AuthenticatedClient(
        base_url="https://mandatum.test",
        token=creds.api_key,
        raise_on_unexpected_status=True,  # an answer the document does not list fails the test
        httpx_args={
            "transport": httpx.ASGITransport(app=app),
            "event_hooks": {"request": [signing_hook(creds)]},
        },
    )


def module(generated: ModuleType, name: str) -> Any:
    return importlib.import_module(f"{generated.__name__}.{name}")


async def test_a_generated_client_runs_the_mandate_flow(
    generated: ModuleType, org: Credentials, temporal: Client, settings: Settings, engine: Engine
) -> None:
    models = module(generated, "models")
    create_request, list_requests, get_request = (
        module(generated, f"api.requests.{name}")
        for name in ("create_request", "list_requests", "get_request")
    )
    create_presentation, verify_presentation, revoke_mandate = (
        module(generated, f"api.credentials.{name}")
        for name in ("create_presentation", "verify_presentation", "revoke_mandate")
    )
    app = create_app(settings, temporal=temporal)
    client = client_for(generated, app, org)
    try:
        body = models.CreateRequestIn.from_dict(policy_request(internalId="lease-7"))
        created = await create_request.asyncio_detailed(client=client, body=body, idempotency_key="lease-7")
        assert created.status_code == 201 and isinstance(created.parsed, models.RequestEnvelope)
        request_id = created.parsed.data.id
        assert created.headers["API-Version"] == "2026-11-01"

        listed = await list_requests.asyncio_detailed(client=client, internal_id="lease-7")
        assert [r.id for r in listed.parsed.data] == [request_id] and listed.parsed.total_pages == 1

        got = await get_request.asyncio_detailed(client=client, request_id=request_id)
        assert isinstance(got.parsed, models.RequestOut) and got.parsed.id == request_id
        [subject] = got.parsed.subjects
        [draft] = got.parsed.credentials
        assert draft.w_3_c_credential is None and draft.action.user_params.to_dict() == {
            "maxAmount": 1200,
            "payees": [],
        }

        # the subject accepts (as the approval page would): the mandate is issued
        await decide(request_handle(temporal, request_id), subject_uuid(subject.id), draft.id, accept=True)
        issued = (await get_request.asyncio_detailed(client=client, request_id=request_id)).parsed
        [credential] = issued.credentials
        assert credential.status == models.CredentialStatus.ACTIVE
        assert isinstance(credential.w_3_c_credential, models.MandateCredential)
        mandate_id = credential.id
        assert credential.w_3_c_credential.id == mandate_id

        # an empty body ({}): the generated code cannot leave an optional body out (it sends UNSET)
        unbound = models.PresentationIn()
        presented = await create_presentation.asyncio_detailed(
            client=client, mandate_id=mandate_id, body=unbound
        )
        assert isinstance(presented.parsed, models.PresentationEnvelope)
        vp = presented.parsed.data.presentation
        assert isinstance(vp, models.VerifiablePresentation) and vp.holder == org.did
        assert vp.verifiable_credential.to_dict() == credential.w_3_c_credential.to_dict()
        resolver = did_resolver(engine, settings)
        service = web_service_did(settings.public_url)
        verify_receipt(presented.parsed.data.receipt.to_dict(), resolver, issuer_did=service)

        # the VP goes back as the typed model wrote it: it must still be the signed VP
        verify_body = models.VerifyIn.from_dict({"presentation": vp.to_dict(), "executionParams": GOOD})
        verified = await verify_presentation.asyncio_detailed(client=client, body=verify_body)
        assert isinstance(verified.parsed, models.VerifyAllowed), verified.content
        assert verified.parsed.credential_id == mandate_id
        assert [e.result for e in verified.parsed.evaluations] == ["pass", "pass"]
        verify_receipt(verified.parsed.receipt.to_dict(), resolver, issuer_did=service)

        again = await verify_presentation.asyncio_detailed(client=client, body=verify_body)
        assert isinstance(again.parsed, models.VerifyDenied) and again.parsed.reason == "vp_already_used"

        revoked = await revoke_mandate.asyncio_detailed(
            client=client, mandate_id=mandate_id, body=models.RevokeIn(reason="user_initiated")
        )
        assert isinstance(revoked.parsed, models.RevokeOut), revoked.content
        assert (
            revoked.parsed.credential_id == mandate_id and revoked.parsed.receipt.type_ == "MANDATE_REVOKED"
        )
        verify_receipt(revoked.parsed.receipt.to_dict(), resolver, issuer_did=service)

        refused = await create_presentation.asyncio_detailed(
            client=client, mandate_id=mandate_id, body=unbound
        )
        assert isinstance(refused.parsed, models.PresentationDenied)
        assert refused.status_code == 400 and refused.parsed.reason == "credential_revoked"
    finally:
        await client.get_async_httpx_client().aclose()
        app.state.ctx.engine.dispose()
