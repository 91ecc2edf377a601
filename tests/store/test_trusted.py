"""Trusted browser sessions in the store (issue 36, ``store/trusted.py``), on SQLite and PostgreSQL:
opened only for a request that allows one, found only for its subject of its organization while
open and unexpired, revoked by the browser that holds it, by the organization, or by a newer
session in the same browser, each with its audit record."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import col, select

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from store import trusted as store
from store.db import read_session, utcnow, write_session
from store.tables import AuditRecord, CredentialRequest, TrustedSession
from tests.conftest import new_org
from tests.support.audit import new_request

pytestmark = pytest.mark.both_databases


def allowing(engine: Engine, org_id: str, contact: str, seconds: int | None = 7200) -> Any:
    bundle = new_request(engine, org_id, (contact,))
    with write_session(engine) as session:
        session.execute(
            update(CredentialRequest)
            .where(col(CredentialRequest.id) == bundle.request.id)
            .values(trusted_session_seconds=seconds)
        )
    return bundle


def types_of(engine: Engine, org_id: str) -> list[str]:
    with read_session(engine) as session:
        return [
            r.type
            for r in session.exec(
                select(AuditRecord)
                .where(AuditRecord.organization_id == org_id)
                .order_by(col(AuditRecord.seq))
            )
            if r.type.startswith("TRUSTED_")
        ]


def test_a_session_stands_in_only_for_its_subject_while_open(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org = new_org(engine, cipher, settings).organization_id
    first = allowing(engine, org, "ana@example.com")
    ana = first.subjects[0][1].id
    now = utcnow()
    opened = store.open_session(engine, first.request.id, ana, "h" * 43, "hosted", now)
    assert opened is not None and opened.seconds == 7200
    assert opened.expires_at == now + timedelta(seconds=7200)

    later = allowing(engine, org, "ana@example.com")
    assert later.subjects[0][1].id == ana  # one subject per organization and contact
    assert store.check(engine, later.request.id, ana, "h" * 43, now) == opened.session_id
    assert store.check(engine, later.request.id, ana, "x" * 43, now) is None  # another browser
    # another contact of the organization, the same contact in another organization
    bob = allowing(engine, org, "bob@example.com")
    assert store.check(engine, bob.request.id, bob.subjects[0][1].id, "h" * 43, now) is None
    other = new_org(engine, cipher, settings).organization_id
    elsewhere = allowing(engine, other, "ana@example.com")
    assert store.check(engine, elsewhere.request.id, elsewhere.subjects[0][1].id, "h" * 43, now) is None
    # a request that does not allow sessions neither takes one nor opens one
    closed = allowing(engine, org, "ana@example.com", seconds=None)
    assert store.check(engine, closed.request.id, ana, "h" * 43, now) is None
    assert store.open_session(engine, closed.request.id, ana, "n" * 43, "hosted", now) is None
    # not a subject of that request
    assert store.check(engine, bob.request.id, ana, "h" * 43, now) is None
    # expired: the moment it ends, and after
    assert store.check(engine, later.request.id, ana, "h" * 43, opened.expires_at) is None
    assert store.check(engine, later.request.id, ana, "h" * 43, now + timedelta(days=1)) is None
    [row] = store.sessions_of(engine, org, ana)
    assert row.last_used_at == now and row.revoked_at is None
    assert types_of(engine, org) == [audit.TRUSTED_SESSION_OPENED]


def test_revocation_by_the_browser_the_organization_and_a_newer_session(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org = new_org(engine, cipher, settings).organization_id
    req = allowing(engine, org, "cy@example.com")
    cy = req.subjects[0][1].id
    now = utcnow()
    laptop = store.open_session(engine, req.request.id, cy, "l" * 43, "hosted", now)
    phone = store.open_session(engine, req.request.id, cy, "p" * 43, "hosted", now)
    assert laptop is not None and phone is not None
    # the same token cannot be stored twice
    with pytest.raises(IntegrityError):
        store.open_session(engine, req.request.id, cy, "l" * 43, "hosted", now)

    # a newer session in the laptop's browser replaces its old one
    newer = store.open_session(engine, req.request.id, cy, "m" * 43, "hosted", now, replaced_hash="l" * 43)
    assert newer is not None
    assert store.check(engine, req.request.id, cy, "l" * 43, now) is None
    assert store.check(engine, req.request.id, cy, "m" * 43, now) == newer.session_id

    # the browser forgets only its own, and only for its subject
    assert store.revoke_browser(engine, "p" * 43, "00000000-0000-4000-8000-000000000000", now) is False
    assert store.revoke_browser(engine, "p" * 43, cy, now) is True
    assert store.revoke_browser(engine, "p" * 43, cy, now) is False  # once
    assert store.check(engine, req.request.id, cy, "p" * 43, now) is None

    # another organization cannot revoke; the organization revokes what is left open
    other = new_org(engine, cipher, settings).organization_id
    assert store.revoke_subject(engine, other, cy, "apiKey:x", now) == []
    assert store.check(engine, req.request.id, cy, "m" * 43, now) == newer.session_id
    assert store.revoke_subject(engine, org, cy, "apiKey:k1", now) == [newer.session_id]
    assert store.check(engine, req.request.id, cy, "m" * 43, now) is None
    by = {s.token_hash[0]: s.revoked_by for s in store.sessions_of(engine, org, cy)}
    assert by == {"l": f"subject:{cy}", "p": f"subject:{cy}", "m": "apiKey:k1"}
    # (a replaced session's record comes just before the one of the session replacing it)
    assert types_of(engine, org) == [
        audit.TRUSTED_SESSION_OPENED,
        audit.TRUSTED_SESSION_OPENED,
        audit.TRUSTED_SESSION_REVOKED,
        audit.TRUSTED_SESSION_OPENED,
        audit.TRUSTED_SESSION_REVOKED,
        audit.TRUSTED_SESSION_REVOKED,
    ]
    with read_session(engine) as session:
        reasons = [
            r.data["reason"]
            for r in session.exec(
                select(AuditRecord).where(
                    AuditRecord.organization_id == org, AuditRecord.type == audit.TRUSTED_SESSION_REVOKED
                )
            )
        ]
    assert sorted(reasons) == ["forgotten by the subject", "replaced", "revoked by the organization"]
    with read_session(engine) as session:
        assert session.exec(select(TrustedSession).where(TrustedSession.subject_id == cy)).all()
