"""Record the histories tests/workflows/test_replay.py replays: real runs of the credential-request workflow.

    .venv/bin/python -m tests.histories.make_histories              # scenarios without a file yet
    .venv/bin/python -m tests.histories.make_histories NAME [NAME...]  # (re)record these

Starts its own Temporal dev server (the installed binary) and a throwaway SQLite database, runs the
scenarios to their end with the real worker, and writes ``<scenario>.json`` next to this file.
Without names it records only the scenarios that have no file: a new scenario is added without
touching the others. Re-record an existing file (and commit it) only when a workflow change is
*meant* to break replay: the old files are what running workflows look like. In particular
``cancel``, ``expiry``, ``decide_then_complete`` and ``decide_then_expiry`` were recorded before
issuance existed (no ``issue-on-acceptance`` patch marker): they prove that workflows started then
still replay, so keep them; ``decide_then_issue`` is a run with issuance (recorded before webhook
events: no ``webhook-events`` marker), ``decide_then_events`` one with a ``credential`` event and
its delivery workflow (a child) per decision (recorded before the subject's journey: no codes);
``journey_with_identity`` one with codes, identity checks and their events; ``cancel_in_temporal``
a cancel requested in Temporal (the workflow ends canceled, with no result: test_replay reads its
status from EXPECTED), ``issuance_failed`` an acceptance whose issuance fails for good (both
recorded before the decisions' local activities), ``decide_local_writes`` two subjects deciding on
two credentials after their codes, each decision's issuance and event run as local activities
(the ``decision-writes-local`` patch: markers instead of activity events); ``secondary_contact``
a subject whose code goes to a secondary contact (issue 36: the link alone, ``open_journey``).
(the ``decision-writes-local`` patch: markers instead of activity events); ``trusted_session`` a
trusted browser session standing in for the code (``verify_session``, issue 36); ``revision_1``
the path of ``decide_local_writes`` on a request started on revision 1 (ADR 23: no patch markers,
the deliveries' starts after the updates' answers); ``revision_2`` the same path on revision 2
(ADR 24: each decision's record a local activity in its update's task, and each event's first
attempt an activity of the request's workflow, with no delivery workflow when it answers);
``revision_3`` the same path on revision 3 (ADR 27: each decision's record, issuance and event in
one local activity).

No secrets go in: the workflow input carries opaque ids only (no contact, no key material), the
canceler is a made-up key id, and worker identities (process id and host name, also in sticky
queue names) are replaced by fixed names.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, update
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import CancelledError

from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from orchestration.temporal import request_handle, start_request_workflow
from store import audit, orgs
from store import requests as store
from store import trusted as trusted_store
from store.db import make_engine, migrate, utcnow, write_session
from store.tables import Credential
from tests.support.journey_messages import code_in, message_for
from tests.support.workflow import start_dev_server
from worker import build_worker
from workflows.messages import (
    CancelInput,
    CancelResult,
    DecisionInput,
    DecisionResult,
    IdentityInput,
    IdentityResult,
    OpenJourneyInput,
    OpenJourneyResult,
    VerifyOtpInput,
    VerifyOtpResult,
    VerifySessionInput,
    VerifySessionResult,
)

HERE = Path(__file__).resolve().parent
IDENTITY = "mandatum-histories"
# scenario name -> the status its workflow ends with (tests/workflows/test_replay.py checks it)
EXPECTED = {
    "cancel": "CANCELED",
    "decide_then_complete": "COMPLETED",
    "expiry": "EXPIRED",
    "decide_then_expiry": "EXPIRED",
    "decide_then_issue": "COMPLETED",
    "decide_then_events": "COMPLETED",
    "journey_with_identity": "COMPLETED",
    "cancel_in_temporal": "CANCELED",
    "issuance_failed": "COMPLETED",
    "decide_local_writes": "COMPLETED",
    "secondary_contact": "COMPLETED",
    "trusted_session": "COMPLETED",
    "revision_1": "COMPLETED",
    "revision_2": "COMPLETED",
    "revision_3": "COMPLETED",
}
# where the scenarios' worker writes its messages, and the keys of its codes (set in main)
JOURNEY: dict[str, Any] = {}

Scenario = Callable[[Client, Engine, str, str], Awaitable[WorkflowHandle[Any, Any]]]


def insert(
    engine: Engine,
    org_id: str,
    contacts: int,
    credentials: int,
    expiry: timedelta,
    level: str = "CONTACT",
    trusted_session_seconds: int | None = None,
) -> store.RequestBundle:
    new = store.NewRequest(
        security_level=level,
        contacts=[store.NewContact(f"subject{i}@example.com", "email") for i in range(contacts)],
        credentials=[
            store.NewCredential("POLICY", f"Credential {i}", scope="payments") for i in range(credentials)
        ],
        internal_id="history-example",
        trusted_session_seconds=trusted_session_seconds,
    )
    bundle = store.create_request(engine, org_id, new, expiry, 1000, None, None)
    assert isinstance(bundle, store.RequestBundle)
    return bundle


async def started(client: Client, queue: str, bundle: store.RequestBundle) -> WorkflowHandle[Any, Any]:
    assert await start_request_workflow(client, queue, bundle)
    return request_handle(client, bundle.request.id)


async def decide(
    handle: WorkflowHandle[Any, Any], subject: str, credential: str, accept: bool
) -> DecisionResult:
    result = await handle.execute_update(
        "decide",
        DecisionInput(
            subject_id=subject, credential_id=credential, accept=accept, channel="email", surface="hosted"
        ),
        result_type=DecisionResult,
    )
    assert isinstance(result, DecisionResult)
    return result


async def cancel_path(client: Client, engine: Engine, queue: str, org_id: str) -> WorkflowHandle[Any, Any]:
    handle = await started(client, queue, insert(engine, org_id, 1, 1, timedelta(days=30)))
    await handle.execute_update(
        "cancel", CancelInput(canceled_by="apiKey:000000000000000000000000"), result_type=CancelResult
    )
    return handle


async def decide_then_complete(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    bundle = insert(engine, org_id, 2, 2, timedelta(days=30))
    handle = await started(client, queue, bundle)
    subjects = [s.id for _, s in bundle.subjects]
    creds = [c.id for c in bundle.credentials]
    await handle.query("status")
    for subject, cred, accept in [
        (subjects[0], creds[0], True),
        (subjects[1], creds[0], True),
        (subjects[0], creds[1], False),
        (subjects[1], creds[1], True),
    ]:
        await decide(handle, subject, cred, accept)
    return handle


async def expiry(client: Client, engine: Engine, queue: str, org_id: str) -> WorkflowHandle[Any, Any]:
    return await started(client, queue, insert(engine, org_id, 1, 1, timedelta(seconds=1)))


async def decide_then_expiry(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    bundle = insert(engine, org_id, 2, 1, timedelta(seconds=2))
    handle = await started(client, queue, bundle)
    await decide(handle, bundle.subjects[0][1].id, bundle.credentials[0].id, False)
    return handle


async def decide_then_issue(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """The one subject accepts the one credential: the decision completes the request and the
    workflow issues the credential (activity ``issue_credential``, behind the patch)."""
    bundle = insert(engine, org_id, 1, 1, timedelta(days=30))
    handle = await started(client, queue, bundle)
    result = await decide(handle, bundle.subjects[0][1].id, bundle.credentials[0].id, True)
    assert result.mandate_id is not None and result.request_status == "COMPLETED", result
    return handle


async def decide_then_events(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """Two subjects, two credentials: the first is accepted by both (issued), the second rejected by
    one; each decision creates a ``credential`` event and starts its ``webhook:<eventId>`` child."""
    bundle = insert(engine, org_id, 2, 2, timedelta(days=30))
    handle = await started(client, queue, bundle)
    (s0, s1), (c0, c1) = [s.id for _, s in bundle.subjects], [c.id for c in bundle.credentials]
    await decide(handle, s0, c0, True)
    assert (await decide(handle, s1, c0, True)).mandate_id is not None
    await decide(handle, s0, c1, False)
    await decide(handle, s1, c1, True)
    return handle


async def confirm(handle: WorkflowHandle[Any, Any], request_id: str, subject: str, code: str) -> str:
    secrets: JourneySecrets = JOURNEY["secrets"]
    result = await handle.execute_update(
        "verify_otp",
        VerifyOtpInput(subject_id=subject, code_hash=secrets.code_hash(request_id, subject, code)),
        result_type=VerifyOtpResult,
    )
    return str(result.outcome)


async def journey_with_identity(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """PLATFORM_REVALIDATION, two subjects, one credential (the "subject-journey" patch): codes are
    sent at the start; the first subject enters a wrong code, then the right one, passes the
    identity check and accepts; the second confirms the code and fails the check, which declines
    for them. Identity and credential events, each with its delivery child."""
    bundle = insert(engine, org_id, 2, 1, timedelta(days=30), level="PLATFORM_REVALIDATION")
    handle = await started(client, queue, bundle)
    request_id, cred = bundle.request.id, bundle.credentials[0].id
    (s0, s1) = [s.id for _, s in bundle.subjects]
    codes = {
        s: code_in(
            (await message_for(request_id, s, outbox=JOURNEY["outbox"], secrets=JOURNEY["secrets"])).text
        )
        for s in (s0, s1)
    }
    wrong = f"{(int(codes[s0]) + 1) % 1_000_000:06d}"
    assert await confirm(handle, request_id, s0, wrong) == "wrong"
    assert await confirm(handle, request_id, s0, codes[s0]) == "passed"
    await handle.execute_update(
        "record_identity",
        IdentityInput(
            subject_id=s0, success=True, source="platform", message="verified", check_id=str(uuid.uuid4())
        ),
        result_type=IdentityResult,
    )
    await decide(handle, s0, cred, True)
    assert await confirm(handle, request_id, s1, codes[s1]) == "passed"
    await handle.execute_update(
        "record_identity",
        IdentityInput(
            subject_id=s1, success=False, source="platform", message="selfie", check_id=str(uuid.uuid4())
        ),
        result_type=IdentityResult,
    )
    return handle


async def cancel_in_temporal(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """An operator's "Request Cancellation" in the Temporal UI once the code is out (the
    "temporal-cancel" patch): the workflow records the cancel by ``temporal`` and ends canceled."""
    bundle = insert(engine, org_id, 1, 1, timedelta(days=30))
    handle = await started(client, queue, bundle)
    await message_for(
        bundle.request.id, bundle.subjects[0][1].id, outbox=JOURNEY["outbox"], secrets=JOURNEY["secrets"]
    )
    await handle.cancel()
    return handle


async def issuance_failed(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """The one subject accepts a credential whose stored content JCS cannot hold (written around the
    API): issuance fails for good ("issuance-failure-ends"), the decision's event still goes out
    and the request completes."""
    bundle = insert(engine, org_id, 1, 1, timedelta(days=30))
    request_id, subject, cred = bundle.request.id, bundle.subjects[0][1].id, bundle.credentials[0].id
    with write_session(engine) as session:
        session.execute(
            update(Credential)
            .where(Credential.id == cred)  # type: ignore[arg-type]
            .values(
                action={
                    "id": "history-action",
                    "version": "history-version",
                    "userParams": {"maxAmount": 2**60},
                }
            )
        )
    handle = await started(client, queue, bundle)
    code = code_in(
        (await message_for(request_id, subject, outbox=JOURNEY["outbox"], secrets=JOURNEY["secrets"])).text
    )
    assert await confirm(handle, request_id, subject, code) == "passed"
    result = await decide(handle, subject, cred, True)
    assert result.mandate_id is None and result.request_status == "COMPLETED", result
    return handle


async def decide_local_writes(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """Two subjects confirm their codes; the first credential is accepted by both (issued), the
    second rejected by one: an issuance and four events, as local activities."""
    bundle = insert(engine, org_id, 2, 2, timedelta(days=30))
    handle = await started(client, queue, bundle)
    request_id = bundle.request.id
    (s0, s1), (c0, c1) = [s.id for _, s in bundle.subjects], [c.id for c in bundle.credentials]
    for subject in (s0, s1):
        message = await message_for(request_id, subject, outbox=JOURNEY["outbox"], secrets=JOURNEY["secrets"])
        assert await confirm(handle, request_id, subject, code_in(message.text)) == "passed"
    await decide(handle, s0, c0, True)
    assert (await decide(handle, s1, c0, True)).mandate_id is not None
    await decide(handle, s0, c1, False)
    await decide(handle, s1, c1, True)
    return handle


async def secondary_contact(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """Issue 36: a subject with a secondary contact is sent the link alone, opens it (their code
    goes to the secondary contact), confirms it and accepts; a subject without one as before."""
    sealed = SecretCipher(JOURNEY["master_key"]).encrypt("+351912345678")
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[
            store.NewContact(
                "subject0@example.com", "email", secondary_sealed=sealed, secondary_kind="phone"
            ),
            store.NewContact("subject1@example.com", "email"),
        ],
        credentials=[store.NewCredential("POLICY", "Credential 0", scope="payments")],
        internal_id="history-example",
    )
    bundle = store.create_request(engine, org_id, new, timedelta(days=30), 1000, None, None)
    assert isinstance(bundle, store.RequestBundle)
    handle = await started(client, queue, bundle)
    request_id = bundle.request.id
    (s0, s1), [c0] = [s.id for _, s in bundle.subjects], [c.id for c in bundle.credentials]
    opened = await handle.execute_update(
        "open_journey", OpenJourneyInput(subject_id=s0), result_type=OpenJourneyResult
    )
    assert opened.code_sent and opened.delivered
    secrets: JourneySecrets = JOURNEY["secrets"]
    assert await confirm(handle, request_id, s0, secrets.code_for(request_id, s0, 1)) == "passed"
    message = await message_for(request_id, s1, outbox=JOURNEY["outbox"], secrets=secrets)
    assert await confirm(handle, request_id, s1, code_in(message.text)) == "passed"
    await decide(handle, s0, c0, True)
    assert (await decide(handle, s1, c0, True)).mandate_id is not None
    return handle


async def trusted_session(
    client: Client, engine: Engine, queue: str, org_id: str
) -> WorkflowHandle[Any, Any]:
    """A request allowing trusted browser sessions (issue 36): the subject's browser holds a session
    (opened here in the store, as an earlier request's page would), which stands in for the code
    (``verify_session`` and its activity ``check_trusted_session``); the decision is recorded with
    the channel ``trusted``. One subject, one credential: issuance and event as local activities."""
    bundle = insert(engine, org_id, 1, 1, timedelta(days=30), trusted_session_seconds=3600)
    secrets: JourneySecrets = JOURNEY["secrets"]
    token = JourneySecrets.trusted_session_token()
    subject = bundle.subjects[0][1].id
    opened = trusted_store.open_session(
        engine, bundle.request.id, subject, secrets.trusted_session_hash(token), "hosted", utcnow()
    )
    assert opened is not None
    handle = await started(client, queue, bundle)
    checked = await handle.execute_update(
        "verify_session",
        VerifySessionInput(subject_id=subject, token_hash=secrets.trusted_session_hash(token)),
        result_type=VerifySessionResult,
    )
    assert checked.passed
    await decide(handle, subject, bundle.credentials[0].id, True)
    return handle


SCENARIOS: dict[str, Scenario] = {
    "cancel": cancel_path,
    "decide_then_complete": decide_then_complete,
    "expiry": expiry,
    "decide_then_expiry": decide_then_expiry,
    "decide_then_issue": decide_then_issue,
    "decide_then_events": decide_then_events,
    "journey_with_identity": journey_with_identity,
    "cancel_in_temporal": cancel_in_temporal,
    "issuance_failed": issuance_failed,
    "decide_local_writes": decide_local_writes,
    "secondary_contact": secondary_contact,
    "trusted_session": trusted_session,
    "revision_1": decide_local_writes,
    "revision_2": decide_local_writes,
    "revision_3": decide_local_writes,
}


async def final_result(handle: WorkflowHandle[Any, Any]) -> dict[str, Any]:
    """The workflow's result; a workflow canceled in Temporal has none: its status is CANCELED."""
    try:
        return dict(await asyncio.wait_for(handle.result(), 30))
    except WorkflowFailureError as err:
        if not isinstance(err.cause, CancelledError):
            raise
        return {"status": "CANCELED"}


def scrub(value: Any) -> Any:
    """Replace worker identities and sticky queue names (process id and host name) by fixed names."""
    if isinstance(value, dict):
        if value.get("kind") == "TASK_QUEUE_KIND_STICKY":
            value = {**value, "name": f"{IDENTITY}-sticky"}
        return {k: IDENTITY if k == "identity" else scrub(v) for k, v in value.items()}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def chosen(names: list[str]) -> list[str]:
    """The scenarios to record: those named, else those without a file yet."""
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"unknown scenario(s) {', '.join(unknown)}; known: {', '.join(SCENARIOS)}")
    return names or [name for name in SCENARIOS if not (HERE / f"{name}.json").exists()]


async def main(names: list[str]) -> None:
    if not names:
        print("every scenario has its history; name the ones to re-record")
        return
    env = await start_dev_server()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{tmp}/histories.db"
        migrate(url)
        engine = make_engine(url)
        master_key = bytes(32)  # a throwaway database: the issuer key it encrypts is thrown away too
        org, _ = orgs.create_organization(engine, SecretCipher(master_key), "History Org")
        queue = f"mandatum-histories-{uuid.uuid4().hex[:8]}"
        settings = Settings(
            environment=Environment.TEST,
            var_dir=Path(tmp),
            database_url=url,
            master_key=base64.b64encode(master_key).decode(),
            task_queue=queue,
            public_url="https://mandatum.test",
        )
        audit.use_service_key(engine, SecretCipher(master_key), settings)
        JOURNEY.update(outbox=Path(tmp) / "outbox", secrets=JourneySecrets(master_key), master_key=master_key)
        async with env:
            with ThreadPoolExecutor(max_workers=4) as executor:
                async with build_worker(env.client, engine, queue, executor, settings):
                    for name in names:
                        handle = await SCENARIOS[name](env.client, engine, queue, org.id)
                        result = await final_result(handle)
                        assert result["status"] == EXPECTED[name], (name, result)
                        history = (await handle.fetch_history()).to_json_dict()
                        path = HERE / f"{name}.json"
                        path.write_text(json.dumps(scrub(history), indent=2) + "\n")
                        print(f"{path.relative_to(HERE.parent.parent)}: {len(history['events'])} events")
        engine.dispose()


if __name__ == "__main__":
    asyncio.run(main(chosen(sys.argv[1:])))
