"""Ed25519 signing keys of the service (the issuer) and of organizations, and our DID documents.

Each owner (``service``, or an organization id) has a key ring: exactly one active key, which
signs, and the keys it replaced, which stay listed in the owner's DID document so that everything
signed before a rotation still verifies. A key is made on first use; concurrent first uses and
rotations, even from several processes, end with one active key: key changes of one owner are
serialized (a PostgreSQL advisory lock; SQLite writes are serial), and a partial unique index
(``uq_signing_key_one_active``) allows one active key per owner whatever happens. Private keys
are stored only encrypted under the master key (``core.secretbox``).

Signing always reads the active key from the database, so a rotation applies at once in every
process. DID documents are cached per process for ``DOCUMENT_CACHE_SECONDS``; a create or rotate
in this process clears the cache at once, one in another process is seen within that time.
"""

from __future__ import annotations

import copy
import hashlib
import threading
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import Engine, case, func, text, update
from sqlmodel import Session, col, select

from core.ids import is_object_id, new_object_id
from core.secretbox import SecretCipher
from core.settings import Settings
from store.db import database_allowed, read_session, upsert_insert, utcnow, write_session
from store.errors import NotFound
from store.tables import Organization, SigningKey, Subject
from trust.did import DID_CONTEXT, Resolver, did_document, key_id, web_organization_did, web_service_did
from trust.keys import Ed25519KeyPair

SERVICE_OWNER = "service"
ACTIVE, RETIRED = "active", "retired"
DOCUMENT_CACHE_SECONDS = 2.0


@dataclass(frozen=True)
class Rotation:
    """A rotation's outcome: the new signing key and how many retired keys stay listed."""

    key: Ed25519KeyPair
    retired_listed: int


# ---- key rings ------------------------------------------------------------------------------


def service_signing_key(engine: Engine, cipher: SecretCipher, settings: Settings) -> Ed25519KeyPair:
    """The issuer's active key (made on first use), signing as ``<service DID>#<multikey>``."""
    return _active_key(engine, cipher, SERVICE_OWNER, web_service_did(settings.public_url))


def organization_signing_key(
    engine: Engine, cipher: SecretCipher, settings: Settings, org_id: str
) -> Ed25519KeyPair:
    """The organization's active key (the VP holder's), made on first use; NotFound if unknown."""
    return _active_key(engine, cipher, org_id, web_organization_did(settings.public_url, org_id))


def rotate_service_key(engine: Engine, cipher: SecretCipher, settings: Settings) -> Rotation:
    return _rotate(engine, cipher, SERVICE_OWNER, web_service_did(settings.public_url))


def rotate_organization_key(
    engine: Engine, cipher: SecretCipher, settings: Settings, org_id: str
) -> Rotation:
    return _rotate(engine, cipher, org_id, web_organization_did(settings.public_url, org_id))


def list_signing_keys(engine: Engine, owner: str = SERVICE_OWNER) -> list[SigningKey]:
    """An owner's keys as its DID document lists them: the active one first, then newest first."""
    with read_session(engine) as session:
        return _ring(session, owner)


def _ring(session: Session, owner: str) -> list[SigningKey]:
    active_first = case((col(SigningKey.status) == ACTIVE, 0), else_=1)
    stmt = (
        select(SigningKey)
        .where(col(SigningKey.owner) == owner)
        .order_by(active_first, col(SigningKey.created_at).desc(), col(SigningKey.id).desc())
    )
    return list(session.exec(stmt))


def _active_row(session: Session, owner: str) -> SigningKey | None:
    stmt = select(SigningKey).where(col(SigningKey.owner) == owner, col(SigningKey.status) == ACTIVE)
    return session.exec(stmt).first()


def _active_key(engine: Engine, cipher: SecretCipher, owner: str, did: str) -> Ed25519KeyPair:
    with read_session(engine) as session:
        row = _active_row(session, owner)
    if row is None:
        row = _create_first_key(engine, cipher, owner)
    return _key_pair(cipher, row, did)


def _create_first_key(engine: Engine, cipher: SecretCipher, owner: str) -> SigningKey:
    """Insert a key unless the owner has an active one; either way return the active key."""
    with write_session(engine) as session:
        _lock_owner(session, owner)
        _check_owner(session, owner)
        insert = upsert_insert(engine.dialect.name)
        session.execute(insert(SigningKey).values(**_new_row(cipher, owner)).on_conflict_do_nothing())
        # the index makes a lost race a no-op even without the lock (READ COMMITTED: this
        # statement sees the winner's committed row)
        row = _active_row(session, owner)
    if row is None:  # pragma: no cover - the insert or the row it conflicted with is there
        raise RuntimeError(f"no active signing key for {owner} after creating one")
    _forget_documents(engine)
    return row


def _rotate(engine: Engine, cipher: SecretCipher, owner: str, did: str) -> Rotation:
    """Retire the active key and add a new one, in one transaction; concurrent rotations of one
    owner run one after the other (``_lock_owner``), so each retires the key the previous made."""
    with write_session(engine) as session:
        _lock_owner(session, owner)
        _check_owner(session, owner)
        session.execute(
            update(SigningKey)
            .where(col(SigningKey.owner) == owner, col(SigningKey.status) == ACTIVE)
            .values(status=RETIRED, retired_at=utcnow())
        )
        row = SigningKey(**_new_row(cipher, owner))
        session.add(row)
        session.flush()
        retired = session.exec(
            select(func.count())
            .select_from(SigningKey)
            .where(col(SigningKey.owner) == owner, col(SigningKey.status) == RETIRED)
        ).one()
    _forget_documents(engine)
    return Rotation(_key_pair(cipher, row, did), int(retired))


def _lock_owner(session: Session, owner: str) -> None:
    """Serialize key changes of one owner. SQLite write transactions are serial already
    (``BEGIN IMMEDIATE``); PostgreSQL takes a transaction-scoped advisory lock. Each statement
    after it sees what the previous holder committed (READ COMMITTED)."""
    bind = session.get_bind()
    if bind.dialect.name == "postgresql":
        digest = hashlib.blake2b(f"mandatum:signing_key:{owner}".encode(), digest_size=8).digest()
        session.execute(
            text("SELECT pg_advisory_xact_lock(:k)"), {"k": int.from_bytes(digest, "big", signed=True)}
        )


def _check_owner(session: Session, owner: str) -> None:
    if owner != SERVICE_OWNER and session.get(Organization, owner) is None:
        raise NotFound(f"organization {owner} not found")


def _new_row(cipher: SecretCipher, owner: str) -> dict[str, Any]:
    pair = Ed25519KeyPair.generate()
    return {
        "id": new_object_id(),
        "owner": owner,
        "public_multikey": pair.public_multikey,
        "private_key_ciphertext": cipher.encrypt(pair.private_multikey),
        "status": ACTIVE,
        "created_at": utcnow(),
        "retired_at": None,
    }


def _key_pair(cipher: SecretCipher, row: SigningKey, did: str) -> Ed25519KeyPair:
    pair = Ed25519KeyPair.from_private_multikey(
        cipher.decrypt(row.private_key_ciphertext), key_id(did, row.public_multikey)
    )
    if pair.public_multikey != row.public_multikey:  # a row whose ciphertext was swapped
        raise ValueError(f"signing key {row.id}: the private key does not match its public key")
    return pair


# ---- DID documents --------------------------------------------------------------------------


def did_document_for(
    engine: Engine, settings: Settings, did: str, fresh: bool = False, shared: bool = False
) -> dict[str, Any] | None:
    """The document of one of our DIDs (service, organization, subject), or None when it is not
    ours or does not exist. Fits ``trust.did.Resolver`` as its fetch callback (``did_resolver``).

    Cached per process for a moment (the verify path resolves the same few DIDs constantly);
    ``fresh`` reads the database, as the public routes always do, so a key rotated by another
    process is published at once. A caller gets its own copy, unless ``shared``: then the cached
    document itself, which it must only read (the resolver, on every signature verified)."""
    cached = None if fresh else _cached_document(engine, did)
    if cached is not None:
        return cached if shared else copy.deepcopy(cached)
    database_allowed()
    document = _build_document(engine, settings, did)
    # only documents that list keys (or a subject's, which has none) are worth keeping
    if document is not None and (document.get("verificationMethod") or ":subjects:" in did):
        _remember_document(engine, did, document)
        return copy.deepcopy(document)
    return document


def did_resolver(engine: Engine, settings: Settings) -> Resolver:
    """A resolver for our own did:web DIDs (from the database) and any did:key (offline); a
    method missing from a cached document is looked up once more in the database, so a key
    just made by another process verifies at once."""
    return Resolver(
        partial(did_document_for, engine, settings, shared=True),  # it only reads them
        fetch_fresh=partial(did_document_for, engine, settings, fresh=True),
    )


def service_did_document(engine: Engine, cipher: SecretCipher, settings: Settings) -> dict[str, Any]:
    """The issuer's document as published (read fresh); the first key is made if there is none."""
    document = did_document_for(engine, settings, web_service_did(settings.public_url), fresh=True)
    if document is None or not document.get("verificationMethod"):
        service_signing_key(engine, cipher, settings)
        document = did_document_for(engine, settings, web_service_did(settings.public_url), fresh=True)
    if document is None:  # pragma: no cover - the service DID always has a document
        raise RuntimeError(f"no DID document for {web_service_did(settings.public_url)}")
    return document


def organization_did_document(
    engine: Engine, cipher: SecretCipher, settings: Settings, org_id: str
) -> dict[str, Any] | None:
    """An organization's document as published (read fresh; its key made on first use), None for
    an unknown organization."""
    did = web_organization_did(settings.public_url, org_id)
    document = did_document_for(engine, settings, did, fresh=True)
    if document is not None and not document.get("verificationMethod"):
        organization_signing_key(engine, cipher, settings, org_id)
        document = did_document_for(engine, settings, did, fresh=True)
    return document


def _build_document(engine: Engine, settings: Settings, did: str) -> dict[str, Any] | None:
    base = web_service_did(settings.public_url)
    if did == base:
        return _keys_document(engine, did, SERVICE_OWNER)
    local = did[len(base) + 1 :] if did.startswith(base + ":") else ""
    kind, _, ident = local.partition(":")
    if kind == "orgs" and is_object_id(ident):
        return _keys_document(engine, did, ident, must_exist=True)
    if kind == "subjects" and _is_uuid(ident):
        with read_session(engine) as session:
            found = session.get(Subject, ident) is not None
        return {"@context": [DID_CONTEXT], "id": did} if found else None
    return None


def _keys_document(engine: Engine, did: str, owner: str, must_exist: bool = False) -> dict[str, Any] | None:
    with read_session(engine) as session:
        if must_exist and session.get(Organization, owner) is None:
            return None
        multikeys = [row.public_multikey for row in _ring(session, owner)]
    return did_document(did, multikeys)


def _is_uuid(value: str) -> bool:
    try:
        return str(uuid.UUID(value)) == value
    except ValueError:
        return False


_documents: weakref.WeakKeyDictionary[Engine, dict[str, tuple[float, dict[str, Any]]]] = (
    weakref.WeakKeyDictionary()
)
_documents_lock = threading.Lock()


def _cached_document(engine: Engine, did: str) -> dict[str, Any] | None:
    with _documents_lock:
        hit = _documents.get(engine, {}).get(did)
    return hit[1] if hit is not None and hit[0] > time.monotonic() else None


def _remember_document(engine: Engine, did: str, document: dict[str, Any]) -> None:
    with _documents_lock:
        entries = _documents.setdefault(engine, {})
        if len(entries) > 10_000:
            entries.clear()
        entries[did] = (time.monotonic() + DOCUMENT_CACHE_SECONDS, copy.deepcopy(document))


def _forget_documents(engine: Engine) -> None:
    with _documents_lock:
        _documents.pop(engine, None)


KEY_CACHE_SECONDS = 2.0

# --- signing keys, cached briefly -------------------------------------------------------------

_keys: weakref.WeakKeyDictionary[Engine, dict[tuple[str, str], tuple[float, Ed25519KeyPair]]] = (
    weakref.WeakKeyDictionary()
)
_keys_lock = threading.Lock()


def _cached_key(engine: Engine, owner: str, did: str, load: Callable[[], Ed25519KeyPair]) -> Ed25519KeyPair:
    with _keys_lock:
        hit = _keys.get(engine, {}).get((owner, did))
    if hit is not None and hit[0] > time.monotonic():
        return hit[1]
    database_allowed()
    pair = load()
    with _keys_lock:
        entries = _keys.setdefault(engine, {})
        if len(entries) > 10_000:
            entries.clear()
        entries[(owner, did)] = (time.monotonic() + KEY_CACHE_SECONDS, pair)
    return pair


def service_key(engine: Engine, cipher: SecretCipher, settings: Settings) -> Ed25519KeyPair:
    """The issuer's active key (receipts), from a per-process cache of ``KEY_CACHE_SECONDS``."""
    return _cached_key(
        engine,
        SERVICE_OWNER,
        web_service_did(settings.public_url),
        lambda: service_signing_key(engine, cipher, settings),
    )


def organization_key(engine: Engine, cipher: SecretCipher, settings: Settings, org_id: str) -> Ed25519KeyPair:
    """An organization's active key (its VPs), cached like ``service_key``."""
    return _cached_key(
        engine,
        org_id,
        web_organization_did(settings.public_url, org_id),
        lambda: organization_signing_key(engine, cipher, settings, org_id),
    )


def forget_keys() -> None:
    """Drop every cached key, so the next signature uses the active key at once (after a rotation
    in this process; tests)."""
    with _keys_lock:
        _keys.clear()
