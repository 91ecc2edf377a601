"""``activities.decisions.write_decision`` on revision 3 (ADR 27): a decision's record, its
credential's issuance and its ``credential`` event in one local activity. It may run again (a retry,
a worker that died mid-task, with another clock); every run answers as the first did and nothing is
written twice. The decision as stored decides whether anything is issued."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine
from sqlmodel import select
from temporalio.testing import ActivityEnvironment

from activities.decisions import DecisionActivities
from activities.mandates import MandateActivities
from activities.requests import RequestActivities
from activities.webhooks import WebhookActivities
from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from store.db import read_session
from store.tables import AuditRecord, Credential, Decision
from store.tables import CredentialRequest as RequestRow
from tests.support.api_client import Credentials
from tests.support.webhooks import events_of_request
from tests.support.workflow import insert_request
from workflows.messages import DecisionWritten, RecordDecisionInput, WriteDecisionInput

AT = datetime(2026, 11, 28, 12, 0, 0, 123000, tzinfo=UTC)


def writer(engine: Engine, cipher: SecretCipher, settings: Settings) -> DecisionActivities:
    return DecisionActivities(
        RequestActivities(engine),
        MandateActivities(engine, cipher, settings),
        WebhookActivities(engine, cipher, settings),
    )


Args = tuple[DecisionActivities, str, str, str, str]


def one_subject(engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials) -> Args:
    """A new request of one subject and one credential: what ``write`` takes first."""
    bundle = insert_request(engine, org.organization_id)
    return (
        writer(engine, cipher, settings),
        org.organization_id,
        bundle.request.id,
        bundle.subjects[0][1].id,
        bundle.credentials[0].id,
    )


def write(
    acts: DecisionActivities,
    org_id: str,
    request_id: str,
    subject: str,
    credential: str,
    *,
    decision_id: str,
    accepted: bool,
    at: datetime = AT,
    issue: bool,
    completes: bool = True,
) -> DecisionWritten:
    inp = WriteDecisionInput(
        record=RecordDecisionInput(
            request_id=request_id,
            decision_id=decision_id,
            subject_id=subject,
            credential_id=credential,
            accepted=accepted,
            channel="email",
            surface="hosted",
            decided_at=at,
            completes_request=completes,
        ),
        organization_id=org_id,
        issue_if_accepted=issue,
    )
    written: DecisionWritten = ActivityEnvironment().run(acts.write_decision, inp)
    return written


def audit_kinds(engine: Engine, request_id: str) -> list[str]:
    with read_session(engine) as session:
        return list(session.exec(select(AuditRecord.type).where(AuditRecord.request_id == request_id)).all())


def credential_row(engine: Engine, credential_id: str) -> Credential:
    with read_session(engine) as session:
        row = session.get(Credential, credential_id)
    assert row is not None
    return row


async def test_an_acceptance_is_recorded_issued_and_reported_once_however_often_it_runs(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    args = one_subject(engine, cipher, settings, org)
    _, _, request_id, _, credential = args
    first_id = f"urn:via:decision:{uuid.uuid4()}"

    first = write(*args, decision_id=first_id, accepted=True, issue=True)
    # the same task run again 5 s later (a worker died after the write): the first run's answer
    again = write(*args, decision_id=first_id, accepted=True, issue=True, at=AT + timedelta(5))

    # the same decision, mandate and event (the event is not made again: ``created`` says so)
    assert (again.decision, again.mandate_id, again.events.by_endpoint()) == (
        first.decision,
        first.mandate_id,
        first.events.by_endpoint(),
    )
    assert (first.events.created, again.events.created) == (True, False)
    assert (first.decision.decision_id, first.decision.decided_at, first.decision.accepted) == (
        first_id,
        AT,
        True,
    )
    row = credential_row(engine, credential)
    assert first.mandate_id is not None and not first.issuance_failed
    assert (row.status, row.mandate_id) == ("ACTIVE", first.mandate_id)
    [event] = events_of_request(engine, org.organization_id, request_id)
    assert first.events.by_endpoint() == {"": event.id}
    # the event comes after the issuance: it carries the credential as issued
    assert event.payload["credential"]["status"] == "ACTIVE"
    assert event.payload["decision"]["action"] == "accept"
    kinds = audit_kinds(engine, request_id)
    assert kinds.count(audit.DECISION_ACCEPT) == 1 and kinds.count(audit.MANDATE_ISSUED) == 1
    with read_session(engine) as session:
        assert session.get(RequestRow, request_id).status == "COMPLETED"  # type: ignore[union-attr]


async def test_a_stored_rejection_issues_nothing_whatever_a_later_run_says(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    args = one_subject(engine, cipher, settings, org)
    _, _, request_id, _, credential = args
    first_id = f"urn:via:decision:{uuid.uuid4()}"

    first = write(*args, decision_id=first_id, accepted=False, issue=True)
    # a resubmit with the other choice (an update Temporal lost): the stored rejection answers
    second = write(
        *args, decision_id=f"urn:via:decision:{uuid.uuid4()}", accepted=True, issue=True, at=AT + timedelta(9)
    )

    assert (second.decision, second.mandate_id) == (first.decision, first.mandate_id)
    assert (first.decision.decision_id, first.decision.accepted, first.mandate_id) == (
        first_id,
        False,
        None,
    )
    row = credential_row(engine, credential)
    assert (row.status, row.mandate_id, row.w3c_credential) == ("REJECTED", None, None)
    [event] = events_of_request(engine, org.organization_id, request_id)
    assert event.payload["decision"]["action"] == "reject"
    kinds = audit_kinds(engine, request_id)
    assert audit.MANDATE_ISSUED not in kinds and audit.DECISION_ACCEPT not in kinds
    with read_session(engine) as session:
        decisions = session.exec(select(Decision).where(Decision.credential_id == credential)).all()
    assert [d.id for d in decisions] == [first_id]


async def test_an_acceptance_others_have_not_made_issues_nothing(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    """``issue_if_accepted`` is the workflow's word that every other subject's acceptance is
    written; without it an acceptance is recorded and reported, and the credential stays pending."""
    bundle = insert_request(engine, org.organization_id, contacts=("ana@example.com", "bea@example.com"))
    request_id, credential = bundle.request.id, bundle.credentials[0].id
    ana = bundle.subjects[0][1].id
    acts = writer(engine, cipher, settings)
    before = credential_row(engine, credential).status

    written = write(
        acts,
        org.organization_id,
        request_id,
        ana,
        credential,
        decision_id=f"urn:via:decision:{uuid.uuid4()}",
        accepted=True,
        issue=False,
        completes=False,
    )

    assert (written.decision.accepted, written.mandate_id, written.issuance_failed) == (True, None, False)
    row = credential_row(engine, credential)
    assert (row.status, row.mandate_id) == (before, None)
    [event] = events_of_request(engine, org.organization_id, request_id)
    assert event.payload["credential"]["status"] == before
    assert audit.MANDATE_ISSUED not in audit_kinds(engine, request_id)
