"""The identity records say what they changed on the subject (issue 34, item 4), on SQLite and
PostgreSQL: ``IDENTITY_VERIFIED`` / ``IDENTITY_FAILED`` with the subject's ``identityStatus`` (and
``kyc`` for the platform's check) after the result and under ``previous`` before it;
``IDENTITY_CHECK_RESTARTED`` with ``kyc`` moved back from PENDING, and nothing of the kind when
the standing did not move."""

from __future__ import annotations

from sqlalchemy import Engine, update
from sqlmodel import col

from core.kinds import IdentitySource
from store import audit, retries
from store import kyc as kyc_store
from store.db import utcnow, write_session
from store.tables import AuditRecord, Subject
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.workflow import insert_request

SUPPORT = "member:m-support"


def _last(engine: Engine, org_id: str, kind: str) -> AuditRecord:
    return [r for r in chain(engine, org_id) if r.type == kind][-1]


def test_a_platform_check_records_the_standing_it_replaced(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    bundle = insert_request(engine, org_id, security_level="PLATFORM_KYC", contacts=("kyc-ana@example.com",))
    request_id, subject_id = bundle.request.id, bundle.subjects[0][1].id
    stuck = kyc_store.start_check(engine, request_id, subject_id, "development", utcnow())

    assert retries.restart_identity(engine, request_id, subject_id, SUPPORT, "provider outage") == [stuck.id]
    restarted = _last(engine, org_id, audit.IDENTITY_CHECK_RESTARTED)
    assert (restarted.actor, restarted.data) == (
        SUPPORT,
        {
            "subjectId": subject_id,
            "checks": [stuck.id],
            "reason": "provider outage",
            "kyc": "NOT_STARTED",
            "previous": {"kyc": "PENDING"},
        },
    )

    fresh = kyc_store.start_check(engine, request_id, subject_id, "development", utcnow())
    at = utcnow()
    kyc_store.record_identity(
        engine, request_id, subject_id, True, IdentitySource.PLATFORM, None, fresh.id, at, "system"
    )
    verified = _last(engine, org_id, audit.IDENTITY_VERIFIED)
    assert verified.data == {
        "subjectId": subject_id,
        "contact": "kyc-ana@example.com",
        "source": "platform",
        "checkId": fresh.id,
        "message": None,
        "securityLevel": "PLATFORM_KYC",
        "date": at.isoformat(),
        "identityStatus": "VERIFIED",
        "kyc": "VERIFIED",
        "previous": {"identityStatus": "UNVERIFIED", "kyc": "PENDING"},
    }


def test_an_organizations_result_records_the_identity_status_alone(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    bundle = insert_request(
        engine, org_id, security_level="ORGANIZATION_KYC", contacts=("kyc-bea@example.com",)
    )
    request_id, subject_id = bundle.request.id, bundle.subjects[0][1].id
    with write_session(engine) as session:  # verified before, by an earlier request
        session.execute(
            update(Subject).where(col(Subject.id) == subject_id).values(identity_status="VERIFIED")
        )
    at = utcnow()
    kyc_store.record_identity(
        engine,
        request_id,
        subject_id,
        False,
        IdentitySource.ORGANIZATION,
        "expired passport",
        None,
        at,
        "organization",
    )
    failed = _last(engine, org_id, audit.IDENTITY_FAILED)
    assert (failed.actor, failed.data["identityStatus"], failed.data["previous"]) == (
        "organization",
        "FAILED",
        {"identityStatus": "VERIFIED"},
    )
    assert "kyc" not in failed.data  # the platform's standing is not the organization's to change


def test_a_restart_that_leaves_the_standing_says_nothing_of_it(engine: Engine, org: Credentials) -> None:
    org_id = org.organization_id
    bundle = insert_request(engine, org_id, security_level="PLATFORM_KYC", contacts=("kyc-cy@example.com",))
    request_id, subject_id = bundle.request.id, bundle.subjects[0][1].id
    stuck = kyc_store.start_check(engine, request_id, subject_id, "development", utcnow())
    with write_session(engine) as session:  # verified meanwhile (another request's check)
        session.execute(update(Subject).where(col(Subject.id) == subject_id).values(kyc="VERIFIED"))

    assert retries.restart_identity(engine, request_id, subject_id, SUPPORT, "stuck") == [stuck.id]
    restarted = _last(engine, org_id, audit.IDENTITY_CHECK_RESTARTED)
    assert restarted.data == {"subjectId": subject_id, "checks": [stuck.id], "reason": "stuck"}
