"""store.users on both databases: an import creates or finds the organization's subject of each
contact, sets its internalId (one subject each per organization), keeps the identity and extra
contacts encrypted, tells created, updated and unchanged apart, refuses an internalId of another
user without writing, and counts as an import in the rate; a request's subject is the same user."""

from __future__ import annotations

import json
import uuid
from datetime import timedelta

from sqlalchemy import Engine

from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from store import users
from store.db import read_session, utcnow
from store.requests import NewContact, NewCredential, NewRequest, create_request
from store.tables import Subject, SubjectProfile
from tests.support.api_client import Credentials

IDENTITY = {"fullName": "Ana Silva", "birth": "1990-04-01", "docId": "AB123", "countryAlpha3": "PRT"}


def _user(contact: str, **kw: object) -> users.NewUser:
    return users.NewUser(contact=contact, kind="email", contact_hash="h" * 64, **kw)  # type: ignore[arg-type]


def _import(engine: Engine, cipher: SecretCipher, org_id: str, *items: users.NewUser) -> list[users.Outcome]:
    found = users.import_users(engine, cipher, org_id, list(items), 100, None, lambda _: {}, "apiKey:test")
    assert isinstance(found, list)
    return found


def test_import_creates_updates_and_keeps_the_identity_encrypted(
    engine: Engine, cipher: SecretCipher, org: Credentials
) -> None:
    contact = f"{uuid.uuid4().hex[:8]}@example.com"
    [made] = _import(
        engine,
        cipher,
        org.organization_id,
        _user(contact, internal_id="r1", extra_contacts=["x@example.com"], identity=IDENTITY),
    )
    assert made.result == users.CREATED and made.subject is not None and made.subject.internal_id == "r1"
    with read_session(engine) as session:
        profile = session.get(SubjectProfile, made.subject.id)
    assert profile is not None and profile.identity_ciphertext and b"Silva" not in profile.identity_ciphertext
    assert json.loads(cipher.decrypt(profile.identity_ciphertext)) == IDENTITY
    [same] = _import(engine, cipher, org.organization_id, _user(contact, internal_id="r1", identity=IDENTITY))
    assert same.result == users.UNCHANGED
    [changed] = _import(engine, cipher, org.organization_id, _user(contact, internal_id="r2"))
    assert changed.result == users.UPDATED
    found = users.find_user(engine, cipher, org.organization_id, internal_id="r2")
    assert found is not None and found.subject.id == made.subject.id
    assert found.extra_contacts == ["x@example.com"] and found.has_identity
    assert users.find_user(engine, cipher, org.organization_id, internal_id="r1") is None
    assert users.find_user(engine, cipher, "0" * 24, contact=contact) is None


def test_an_internal_id_of_another_user_writes_nothing(
    engine: Engine, cipher: SecretCipher, org: Credentials
) -> None:
    a, b = (f"{uuid.uuid4().hex[:8]}@example.com" for _ in range(2))
    _import(engine, cipher, org.organization_id, _user(a, internal_id="taken"))
    [refused] = _import(engine, cipher, org.organization_id, _user(b, internal_id="taken", identity=IDENTITY))
    assert refused.result == users.ELSEWHERE and refused.subject is None
    assert users.find_user(engine, cipher, org.organization_id, contact=b) is None


def test_a_requests_subject_is_the_same_user_and_its_doc_id_is_expected(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    secrets = JourneySecrets(settings.master_key_bytes())
    contact = f"{uuid.uuid4().hex[:8]}@example.com"
    new = NewRequest(
        security_level="PLATFORM_REVALIDATION",
        contacts=[
            NewContact(
                contact,
                "email",
                None,
                secrets.contact_hash(contact),
                doc_id_hash=secrets.document_hash("AB123"),
            )
        ],
        credentials=[NewCredential(resource_type="DOCUMENT", name="Lease", data=[])],
    )
    bundle = create_request(engine, org.organization_id, new, timedelta(days=1), 100, None, lambda _: {}, "t")
    assert not isinstance(bundle, type(None))
    subject = bundle.subjects[0][1]  # type: ignore[union-attr]
    [made] = _import(engine, cipher, org.organization_id, _user(contact, identity=IDENTITY))
    assert made.result == users.UPDATED and made.subject is not None and made.subject.id == subject.id
    expected = users.expected_identity(engine, cipher, bundle.request.id, subject.id)  # type: ignore[union-attr]
    assert expected.doc_id_hash == secrets.document_hash("AB123") and expected.identity == IDENTITY
    with read_session(engine) as session:
        assert session.get(Subject, subject.id) is not None
    with read_session(engine) as session:
        assert users.imports_since(session, org.organization_id, utcnow() - timedelta(minutes=1)) == 1
