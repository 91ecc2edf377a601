"""Serving the Bitstring Status List credentials that every mandate's ``credentialStatus`` names.

A list's bits are its credentials that have a ``revoked_at`` (revocation is final, so the number of
them only grows). The signed list credential is made again only when that number changed: each
process keeps the last one it made per list, keyed by the count, and a request costs one
``count(*)`` on the unique (status_list_id, status_list_index) index until a revocation lands.

``validFrom`` is the moment the list's content last changed (its latest revocation, or its
creation), so every process produces the same content for the same revocations; only the proof's
``created`` differs (the moment that process signed it).
"""

from __future__ import annotations

import hashlib
import threading
import weakref
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, func
from sqlmodel import col, select

from core.secretbox import SecretCipher
from core.settings import Settings
from store import keys
from store.db import aware_utc, read_session, utcnow
from store.tables import Credential, StatusList
from trust import status_list as bsl
from trust.context import context_url

TTL_SECONDS = 30  # how long a verifier may cache a list (Cache-Control and the list's ttl)


@dataclass(frozen=True)
class ServedList:
    document: dict[str, Any]
    revoked: int  # entries set
    etag: str  # weak: the same for every process's signing of the same content


_cache: weakref.WeakKeyDictionary[Engine, dict[tuple[str, str], ServedList]] = weakref.WeakKeyDictionary()
_cache_lock = threading.Lock()


def _revoked_count(engine: Engine, list_id: str) -> int | None:
    """How many entries of the list are revoked; None when there is no such list."""
    with read_session(engine) as session:
        if session.get(StatusList, list_id) is None:
            return None
        return int(
            session.exec(
                select(func.count())
                .select_from(Credential)
                .where(col(Credential.status_list_id) == list_id, col(Credential.revoked_at).is_not(None))
            ).one()
        )


def _revocations(engine: Engine, list_id: str) -> tuple[StatusList, list[tuple[int, datetime]]]:
    with read_session(engine) as session:
        listed = session.get(StatusList, list_id)
        assert listed is not None  # lists are never deleted
        rows = session.exec(
            select(Credential.status_list_index, Credential.revoked_at).where(
                col(Credential.status_list_id) == list_id, col(Credential.revoked_at).is_not(None)
            )
        )
        return listed, [(int(i), at) for i, at in rows if i is not None and at is not None]


def _build(engine: Engine, cipher: SecretCipher, settings: Settings, list_id: str) -> ServedList:
    listed, revocations = _revocations(engine, list_id)
    encoded = bsl.encode_list(bsl.bitstring((i for i, _ in revocations), listed.length))
    changed = max([aware_utc(listed.created_at), *(aware_utc(at) for _, at in revocations)])
    document = bsl.list_credential(
        list_url=settings.status_list_url(list_id),
        issuer_key=keys.service_signing_key(engine, cipher, settings),
        context_url=context_url(settings.public_url),
        encoded_list=encoded,
        valid_from=changed,
        created=max(utcnow(), changed),
        ttl_ms=TTL_SECONDS * 1000,
        purpose=listed.purpose,
    )
    digest = hashlib.sha256(f"{document['validFrom']}|{encoded}".encode()).hexdigest()[:32]
    return ServedList(document, len(revocations), f'W/"{digest}"')


def served_list(engine: Engine, cipher: SecretCipher, settings: Settings, list_id: str) -> ServedList | None:
    """The signed list credential ``list_id`` as it stands, or None when there is no such list."""
    count = _revoked_count(engine, list_id)
    if count is None:
        return None
    key = (list_id, settings.status_list_url(list_id))
    with _cache_lock:
        hit = _cache.get(engine, {}).get(key)
    if hit is not None and hit.revoked == count:
        return hit
    built = _build(engine, cipher, settings, list_id)
    with _cache_lock:
        entries = _cache.setdefault(engine, {})
        if len(entries) > 1_000:
            entries.clear()
        current = entries.get(key)
        if current is None or current.revoked <= built.revoked:
            entries[key] = built
    return built
