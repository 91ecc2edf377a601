"""Reading the audit trail: a page of an organization's records (``GET /activity``) and the check
of every chain (``mandatum audit verify``).

A record's proof names its key as ``<service DID>#<public key multibase>``, and the service DID
comes from the public URL at the time of signing. A service that moved (another port in
development, a new host name) keeps its keys, so the check accepts a proof under an earlier
service DID (a bare ``did:web:<host>``, no path) when the key is one of the service's own, current
or retired, and the signature verifies under it. Organization keys, foreign keys and DIDs with a
path (``:orgs:…``) are still refused."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Engine, func, select
from sqlmodel import col

from core.settings import Settings
from store.audit import ChainCheck, RecordCheck, check_chain, check_record
from store.db import read_session
from store.keys import SERVICE_OWNER, did_document_for, list_signing_keys
from store.tables import AuditHead, AuditRecord
from trust.did import Resolver, did_document, key_id, web_service_did

_R = AuditRecord.__table__  # type: ignore[attr-defined]
_H = AuditHead.__table__  # type: ignore[attr-defined]
CHECK_BATCH = 500


@dataclass(frozen=True)
class ActivityFilter:
    types: Sequence[str] = ()
    request_id: str | None = None
    credential_id: str | None = None
    credential_aliases: tuple[str, ...] = ()  # the same credential's other id (its URN, or its id)
    date_from: datetime | None = None
    date_to: datetime | None = None


def activity_page(
    engine: Engine, org_id: str, where: ActivityFilter, page_index: int, page_size: int
) -> tuple[list[AuditRecord], int]:
    """The organization's records matching ``where``, newest first, and the number of pages."""
    conditions = [col(AuditRecord.organization_id) == org_id]
    if where.types:
        conditions.append(col(AuditRecord.type).in_(list(where.types)))
    if where.request_id:
        conditions.append(col(AuditRecord.request_id) == where.request_id)
    if where.credential_id:
        ids = [where.credential_id, *where.credential_aliases]
        conditions.append(col(AuditRecord.credential_id).in_(ids))
    if where.date_from:
        conditions.append(col(AuditRecord.created_at) >= where.date_from)
    if where.date_to:
        conditions.append(col(AuditRecord.created_at) <= where.date_to)
    with read_session(engine) as session:
        total = int(
            session.execute(select(func.count()).select_from(AuditRecord).where(*conditions)).scalar_one()
        )
        rows = (
            session.execute(
                select(AuditRecord)
                .where(*conditions)
                .order_by(col(AuditRecord.seq).desc())
                .offset(page_index * page_size)
                .limit(page_size)
            )
            .scalars()
            .all()
        )
    return list(rows), math.ceil(total / page_size)


def _organizations(engine: Engine, org_id: str | None) -> list[str]:
    if org_id is not None:
        return [org_id]
    with engine.connect() as conn:
        found = {r[0] for r in conn.execute(select(_R.c.organization_id).distinct())}
        found |= {r[0] for r in conn.execute(select(_H.c.organization_id))}
    return sorted(found)


def _rows_in_order(engine: Engine, org_id: str) -> Any:
    """Every record of the chain by ``seq``, read in batches (a chain may be long)."""
    after = 0
    while True:
        with engine.connect() as conn:
            batch = conn.execute(
                select(_R)
                .where(_R.c.organization_id == org_id, _R.c.seq > after)
                .order_by(_R.c.seq)
                .limit(CHECK_BATCH)
            ).all()
        yield from batch
        if len(batch) < CHECK_BATCH:
            return
        after = batch[-1].seq


def _bare_did_web(did: str) -> bool:
    """A did:web naming a host only (``did:web:example.com``, ``did:web:127.0.0.1%3A8001``)."""
    host = did.removeprefix("did:web:")
    return did.startswith("did:web:") and bool(host) and ":" not in host and "#" not in host


@dataclass(frozen=True)
class ServiceKeys:
    """The service's public keys (current and retired) and the DIDs they may appear under."""

    service_did: str
    multikeys: frozenset[str]

    def earlier_method(self, method: str) -> bool:
        """``method`` is one of our keys under an earlier public URL of this service."""
        did, _, multikey = method.partition("#")
        return (
            did != self.service_did
            and _bare_did_web(did)
            and multikey in self.multikeys
            and method == key_id(did, multikey)
        )

    def earlier_document(self, did: str) -> dict[str, Any] | None:
        if did == self.service_did or not _bare_did_web(did):
            return None
        return did_document(did, sorted(self.multikeys))


def _resolver(engine: Engine, settings: Settings, ours: ServiceKeys) -> Resolver:
    """Our DIDs as published now, and the service's keys under its earlier DIDs."""

    def fetch(did: str, fresh: bool = False) -> dict[str, Any] | None:
        return did_document_for(engine, settings, did, fresh=fresh) or ours.earlier_document(did)

    return Resolver(fetch, fetch_fresh=partial(fetch, fresh=True))


def _service_keys(engine: Engine, settings: Settings) -> ServiceKeys:
    return ServiceKeys(
        web_service_did(settings.public_url),
        frozenset(k.public_multikey for k in list_signing_keys(engine, SERVICE_OWNER)),
    )


def credential_records(
    engine: Engine, settings: Settings, org_id: str, credential_ids: Sequence[str]
) -> list[tuple[AuditRecord, RecordCheck]]:
    """The organization's records about a credential (under any of its ids), in chain order,
    each checked on its own and against the record before it in the organization's chain."""
    with read_session(engine) as session:
        rows = list(
            session.execute(
                select(AuditRecord)
                .where(
                    col(AuditRecord.organization_id) == org_id,
                    col(AuditRecord.credential_id).in_(list(credential_ids)),
                )
                .order_by(col(AuditRecord.seq))
            )
            .scalars()
            .all()
        )
        before = {r.seq - 1 for r in rows if r.seq > 1}
        hashes: dict[int, str] = {}
        if before:
            found = session.execute(
                select(_R.c.seq, _R.c.hash).where(_R.c.organization_id == org_id, _R.c.seq.in_(before))
            )
            hashes = {int(seq): str(h) for seq, h in found}
    ours = _service_keys(engine, settings)
    resolver = _resolver(engine, settings, ours)
    return [
        (row, check_record(row, hashes.get(row.seq - 1), resolver, ours.service_did, ours.earlier_method))
        for row in rows
    ]


def verify_chains(engine: Engine, settings: Settings, org_id: str | None = None) -> list[ChainCheck]:
    """Check the chain of one organization, or of every organization that has records."""
    ours = _service_keys(engine, settings)
    resolver = _resolver(engine, settings, ours)
    checks = []
    for org in _organizations(engine, org_id):
        with engine.connect() as conn:
            head = conn.execute(select(_H).where(_H.c.organization_id == org)).first()
        checks.append(
            check_chain(
                _rows_in_order(engine, org),
                head,
                org,
                resolver,
                web_service_did(settings.public_url),
                ours.earlier_method,
            )
        )
    return checks
