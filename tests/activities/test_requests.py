"""``activities.requests.record_decision`` on revision 2 (ADR 24): run as a local activity in the
update's task, it may run again with another clock (a worker died mid-task), or for a decision
Temporal lost and the subject submitted again; the subject's decision is stored once, and every run
answers with the one stored."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlmodel import select
from temporalio.testing import ActivityEnvironment

from activities.requests import RequestActivities
from store import audit
from store.db import read_session
from store.tables import AuditRecord, Decision
from tests.support.api_client import Credentials
from tests.support.workflow import db_request, insert_request
from workflows.messages import RecordDecisionInput, RecordedDecision


async def test_the_record_answers_with_the_decision_stored_once(engine: Engine, org: Credentials) -> None:
    bundle = insert_request(engine, org.organization_id)
    request_id, subject, credential = bundle.request.id, bundle.subjects[0][1].id, bundle.credentials[0].id
    first_at = datetime(2026, 11, 28, 12, 0, 0, 123000, tzinfo=UTC)

    def record(decision_id: str, accepted: bool, at: datetime) -> RecordedDecision:
        inp = RecordDecisionInput(
            request_id=request_id,
            decision_id=decision_id,
            subject_id=subject,
            credential_id=credential,
            accepted=accepted,
            channel="email",
            surface="hosted",
            decided_at=at,
            completes_request=True,
        )
        result: RecordedDecision = ActivityEnvironment().run(RequestActivities(engine).record_decision, inp)
        return result

    first_id = "urn:via:decision:first"
    first = record(first_id, False, first_at)
    assert first == RecordedDecision(decision_id=first_id, decided_at=first_at, accepted=False)
    # the same task run again 5 s later, then a resubmit with the other choice and a new id
    assert record(first_id, False, first_at + timedelta(seconds=5)) == first
    assert record("urn:via:decision:second", True, first_at + timedelta(seconds=9)) == first

    stored = db_request(engine, org.organization_id, request_id)
    assert [(d.id, d.accepted) for d, _ in stored.decisions[credential]] == [
        ("urn:via:decision:first", False)
    ]
    assert stored.request.status == "COMPLETED"
    with read_session(engine) as session:
        decisions = session.exec(select(Decision).where(Decision.credential_id == credential)).all()
        kinds = session.exec(select(AuditRecord.type).where(AuditRecord.request_id == request_id)).all()
    assert len(decisions) == 1
    assert kinds.count(audit.DECISION_REJECT) == 1 and audit.DECISION_ACCEPT not in kinds
