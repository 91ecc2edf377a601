"""An issuance that no retry can fix ends (issue 12, item 2b).

The intake refuses values JCS cannot hold; a row that holds one anyway (written around the API)
must not make the workflow retry its issuance for ever: the credential becomes ``FAILED`` with a
``MANDATE_ISSUANCE_FAILED`` audit record, the decision's ``credential`` event carries that status,
and the workflow completes.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from sqlalchemy import Engine, update
from temporalio.client import Client

from core.actors import TEMPORAL
from orchestration.temporal import request_handle
from services import mandates
from store import audit
from store.db import write_session
from store.tables import Credential
from tests.support.api_client import Credentials, SignedClient
from tests.support.audit import chain
from tests.support.mandates import create_request as create
from tests.support.webhooks import events_of_request
from tests.support.workflow import activity_runs, db_request, decide, result_of, subject_uuid
from workflows.ids import SA_STATUS, ActivityNames

pytestmark = pytest.mark.usefixtures("worker")

ISSUE = ActivityNames.ISSUE_CREDENTIAL
BEYOND_JCS = 2**60  # JCS numbers are IEEE doubles: an integer this large has no canonical form
DOCUMENT = {
    "type": "DOCUMENT",
    "name": "Lease",
    "data": [{"label": "Address", "type": "text", "value": "Rua 1", "hidden": False}],
}


def force(engine: Engine, credential_id: str, **values: Any) -> None:
    """Write straight into the credential row, as a bug or a hand edit would, around the API."""
    with write_session(engine) as session:
        session.execute(
            update(Credential)
            .where(Credential.id == credential_id)  # type: ignore[arg-type]
            .values(**values)
        )


@pytest.mark.parametrize("kind", ["DOCUMENT", "POLICY"])
async def test_a_credential_jcs_cannot_hold_fails_once_and_the_workflow_completes(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    org: Credentials,
    kind: str,
) -> None:
    data = await create(api, **({"credentials": [DOCUMENT]} if kind == "DOCUMENT" else {}))
    request_id, cred_id = data["id"], data["credentials"][0]["id"]
    stored = db_request(engine, org.organization_id, request_id).credentials[0]
    if kind == "DOCUMENT":
        force(
            engine, cred_id, data=[{"label": "Amount", "type": "text", "value": BEYOND_JCS, "hidden": False}]
        )
    else:
        assert stored.action is not None
        force(engine, cred_id, action={**stored.action, "userParams": {"maxAmount": BEYOND_JCS}})
    handle = request_handle(temporal, request_id)

    decision = await decide(handle, subject_uuid(data["subjects"][0]["id"]), cred_id, accept=True)

    assert decision.mandate_id is None and decision.request_status == "COMPLETED"
    assert (await result_of(handle)).status == "COMPLETED"
    after = db_request(engine, org.organization_id, request_id)
    assert after.request.status == "COMPLETED"
    [cred] = after.credentials
    assert (cred.status, cred.mandate_id, cred.w3c_credential) == ("FAILED", None, None)
    records = [
        r
        for r in chain(engine, org.organization_id)
        if r.request_id == request_id and r.type == audit.MANDATE_ISSUANCE_FAILED
    ]
    assert [(r.credential_id, r.data["reason"]) for r in records] == [(cred_id, "not_canonicalizable")]
    assert str(BEYOND_JCS) not in str(records[0].data)  # a fixed reason, never the stored value
    [event] = [
        e for e in events_of_request(engine, org.organization_id, request_id) if e.event_type == "credential"
    ]
    assert event.payload["credential"]["status"] == "FAILED"
    assert event.payload["decision"]["action"] == "accept"
    listed = (await api.get(f"/request/{request_id}")).json()["credentials"]
    assert [c["status"] for c in listed] == ["FAILED"]
    # one attempt, failed for good: no retries. On revision 3 the issuance is a step of the
    # decision's one write (a local activity), which answers that it failed
    runs = activity_runs((await handle.fetch_history()).events)
    assert [r.type for r in runs if r.type in (ISSUE, ActivityNames.WRITE_DECISION)] == [
        ActivityNames.WRITE_DECISION
    ]
    [write] = [r for r in runs if r.type == ActivityNames.WRITE_DECISION]
    assert (write.attempt, write.local, write.failure) == (1, True, None)
    assert write.result is not None
    assert json.loads(write.result.data)["issuance_failed"] is True
    assert json.loads(write.result.data)["issued"] is None
    assert (await handle.describe()).typed_search_attributes.get(SA_STATUS) == "COMPLETED"


async def test_a_failed_credential_is_recorded_once(
    api: SignedClient,
    temporal: Client,
    engine: Engine,
    org: Credentials,
) -> None:
    """The failure's write is idempotent: a retried activity adds no second record."""
    data = await create(api, credentials=[DOCUMENT])
    request_id, cred_id = data["id"], data["credentials"][0]["id"]
    assert mandates.record_issuance_failure(engine, TEMPORAL, cred_id, "not_canonicalizable")
    assert not mandates.record_issuance_failure(engine, TEMPORAL, cred_id, "not_canonicalizable")
    assert [
        r.type
        for r in chain(engine, org.organization_id)
        if r.request_id == request_id and r.type == audit.MANDATE_ISSUANCE_FAILED
    ] == [audit.MANDATE_ISSUANCE_FAILED]
    assert db_request(engine, org.organization_id, request_id).credentials[0].status == "FAILED"
