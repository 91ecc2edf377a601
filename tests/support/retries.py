"""A credential whose issuance failed for good, for the tests of support's retries (issue 32):
its stored action holds a number JCS cannot hold (as a bug or a hand edit around the API would
write), so signing fails; ``repair`` puts the content right again, after which a retry issues."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from sqlalchemy import Engine, update
from temporalio.client import Client

from orchestration.temporal import request_handle, start_request_workflow
from store.db import write_session
from store.tables import Credential
from tests.support.journey_messages import TEST_OUTBOX
from tests.support.workflow import db_request, decide, insert_request

BEYOND_JCS = 2**60  # JCS numbers are IEEE doubles: an integer this large has no canonical form
UNSIGNABLE_ACTION = {"id": "act_unsignable", "version": 1, "userParams": {"maxAmount": BEYOND_JCS}}


def force(engine: Engine, credential_id: str, **values: Any) -> None:
    """Write straight into the credential row, around the API."""
    with write_session(engine) as session:
        session.execute(
            update(Credential)
            .where(Credential.id == credential_id)  # type: ignore[arg-type]
            .values(**values)
        )


def repair(engine: Engine, credential_id: str) -> None:
    force(engine, credential_id, action=None)


async def failed_credential(
    client: Client,
    queue: str,
    engine: Engine,
    org_id: str,
    outbox: Path = TEST_OUTBOX,
    secrets: Any = None,
    contacts: tuple[str, ...] = ("ana@example.com",),
) -> tuple[str, str]:
    """A request whose only credential every subject accepted and whose issuance failed for good
    (the request COMPLETED, the credential FAILED): (request id, credential id)."""
    bundle = insert_request(engine, org_id, contacts=contacts)
    cred = bundle.credentials[0].id
    force(engine, cred, action=UNSIGNABLE_ACTION)
    assert await start_request_workflow(client, queue, bundle)
    handle = request_handle(client, bundle.request.id)
    for _, subject in bundle.subjects:
        decided = await decide(handle, subject.id, cred, outbox=outbox, secrets=secrets)
        assert decided.mandate_id is None
    assert decided.request_status == "COMPLETED"
    assert db_request(engine, org_id, bundle.request.id).credentials[0].status == "FAILED"
    return bundle.request.id, cred
