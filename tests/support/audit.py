"""Building audit trails in tests: an issued mandate without the workflow, reading a chain, and
changing one behind the service's back."""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from sqlalchemy import Engine, select, text
from sqlmodel import col

from cli.devstack import EXAMPLE_ACTION_ID
from core.actors import TEMPORAL
from core.ids import urn
from core.secretbox import SecretCipher
from core.settings import Settings
from services import mandates
from store import actions
from store import requests as store
from store.db import utcnow, write_connection
from store.tables import AuditRecord

AUDIT_MIGRATION = importlib.import_module("store.migrations.versions.0005_audit")


def tamper(engine: Engine, statement: object) -> None:
    """Run ``statement`` as someone with the database's keys would: past the append-only
    triggers (dropped or disabled for it, then restored)."""
    with write_connection(engine) as conn:
        if conn.dialect.name == "postgresql":
            conn.execute(text("ALTER TABLE audit_record DISABLE TRIGGER audit_record_append_only"))
            conn.execute(statement)  # type: ignore[call-overload]
            conn.execute(text("ALTER TABLE audit_record ENABLE TRIGGER audit_record_append_only"))
            return
        for kind in ("update", "delete"):
            conn.execute(text(f"DROP TRIGGER audit_record_no_{kind}"))
        conn.execute(statement)  # type: ignore[call-overload]
        for trigger in AUDIT_MIGRATION.SQLITE_TRIGGERS:
            conn.execute(text(trigger))


@dataclass(frozen=True)
class Issued:
    request_id: str
    credential_id: str  # the entity id
    mandate_id: str
    subject_id: str


def new_request(engine: Engine, org_id: str, contacts: tuple[str, ...] = ("ana@example.com",)) -> Any:
    pin, problems = actions.pin_for_request(
        engine, org_id, EXAMPLE_ACTION_ID, {"maxAmount": 1200}, where="credentials.0.action"
    )
    assert pin is not None, problems
    new = store.NewRequest(
        security_level="CONTACT",
        contacts=[store.NewContact(c, "email") for c in contacts],
        credentials=[store.NewCredential("POLICY", "Rent", scope="payments", action=pin)],
        name="Pay the rent",
    )
    bundle = store.create_request(engine, org_id, new, timedelta(days=30), 10_000, None, None)
    assert isinstance(bundle, store.RequestBundle)
    return bundle


def issued_mandate(engine: Engine, cipher: SecretCipher, settings: Settings, org_id: str) -> Issued:
    """What the request workflow does on acceptance, called directly (decision, then issuance)."""
    bundle = new_request(engine, org_id)
    subject, cred = bundle.subjects[0][1], bundle.credentials[0]
    store.record_decision(
        engine,
        urn("decision"),
        bundle.request.id,
        cred.id,
        subject.id,
        True,
        "email",
        "iframe",
        utcnow(),
        True,
    )
    done = mandates.issue(engine, cipher, settings, cred.id, actor=TEMPORAL)
    return Issued(bundle.request.id, cred.id, done.mandate_id, subject.id)


def chain(engine: Engine, org_id: str) -> list[AuditRecord]:
    """The organization's records in chain order."""
    with engine.connect() as conn:
        rows = conn.execute(
            select(AuditRecord)
            .where(col(AuditRecord.organization_id) == org_id)
            .order_by(col(AuditRecord.seq))
        ).all()
    return [AuditRecord.model_validate(dict(r._mapping)) for r in rows]


def changes(engine: Engine, org_id: str) -> list[AuditRecord]:
    """The organization's records in chain order but the ``MEMBER_INVITED`` of members a test
    invites to log in with: what the test's own actions wrote."""
    return [r for r in chain(engine, org_id) if r.type != "MEMBER_INVITED"]


def actors(engine: Engine, org_id: str, kind: str) -> list[str | None]:
    """The actor of each of the organization's records of type ``kind``, in chain order."""
    return [r.actor for r in chain(engine, org_id) if r.type == kind]
