"""The tamper-evident audit trail (SPEC.md "Audit trail"): append, read, and check the chains.

Each organization's records form a chain. A record is the JSON document

    {id, type, organizationId, seq, createdAt, requestId?, credentialId?, actor?, data, prevHash, proof}

where ``seq`` counts from 1 without gaps, ``prevHash`` is the previous record's ``hash`` (null for
the first), and ``proof`` is an eddsa-jcs-2022 DataIntegrityProof by the service key (purpose
``assertionMethod``) over the rest, so anyone holding the service's DID document can check a
record offline. ``hash`` is the lower-case hex SHA-256 of the JCS form of the whole document,
proof included. ``audit_head`` keeps each chain's last ``seq`` and ``hash``: removing the newest shows.

``append`` runs inside the caller's transaction, so a record exists exactly when the change it
records was committed. Appends of one organization are serialized on its head row: on PostgreSQL a
row lock (``FOR UPDATE``) held to the end of the transaction, on SQLite by the database itself
(write transactions start with ``BEGIN IMMEDIATE``). The record is signed inside that window, so the
signing key is fetched before the transaction (``signer``), never through a second connection.
Which records the service writes, and where, is listed in ``RECORD_TYPES`` and docs/architecture.md.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
import uuid
import weakref
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from types import SimpleNamespace
from typing import Any

from sqlalchemy import Connection, Engine, bindparam, select, update

from core.observe.metrics import AUDIT_APPEND
from core.secretbox import SecretCipher
from core.settings import Settings
from store.audit_types import *  # noqa: F403 (the record types: callers name them audit.X)
from store.audit_types import RECORD_TYPES
from store.db import upsert_insert, utcnow
from store.keys import service_key
from store.prepared import Encoded, Prepared
from store.tables import AuditHead, AuditRecord
from trust.eddsa_jcs import ProofError, create_proof, verify_document
from trust.jcs import CanonicalizationError, canonical_object, canonicalize
from trust.keys import Ed25519KeyPair

ASSERTION_METHOD = "assertionMethod"

_RECORDS = AuditRecord.__table__  # type: ignore[attr-defined]
_HEADS = AuditHead.__table__  # type: ignore[attr-defined]
# run on the DBAPI cursor (store.prepared): an append is on the verification's hot path
_HEAD = select(_HEADS.c.seq, _HEADS.c.hash).where(_HEADS.c.organization_id == bindparam("org"))
_READ_HEAD = Prepared(_HEAD)  # SQLite: the write transaction (BEGIN IMMEDIATE) holds the database
_LOCK_HEAD = Prepared(_HEAD.with_for_update())  # elsewhere: the head's row, to the transaction's end
_first_heads: dict[str, Prepared] = {}  # each dialect's INSERT ... ON CONFLICT DO NOTHING of a head
_INSERT = Prepared(_RECORDS.insert(), column_keys=[c.key for c in _RECORDS.columns])
_MOVE_HEAD = Prepared(
    update(_HEADS)
    .where(_HEADS.c.organization_id == bindparam("org"))
    .values(seq=bindparam("seq"), hash=bindparam("hash"))
)


@dataclass(frozen=True)
class Entry:
    """What happened; ``append`` adds the chain members and the signature."""

    type: str
    organization_id: str
    data: Mapping[str, Any] = field(default_factory=dict)
    request_id: str | None = None
    credential_id: str | None = None
    actor: str | None = None


# --- the signer of each database ----------------------------------------------------------------

Signer = Callable[[], Ed25519KeyPair]
_signers: weakref.WeakKeyDictionary[Engine, Signer] = weakref.WeakKeyDictionary()
_signers_lock = threading.Lock()


def use_signer(engine: Engine, signer: Signer) -> None:
    """Records written through ``engine`` are signed with the key ``signer`` returns (the service's
    active key; see ``store.keys.service_key``). Set where the engine is made: the API,
    the worker, the ``mandatum`` command, the tests."""
    with _signers_lock:
        _signers[engine] = signer


def use_service_key(engine: Engine, cipher: SecretCipher, settings: Settings) -> None:
    """Sign this database's records with the service's active key (cached briefly per process)."""
    use_signer(engine, partial(service_key, engine, cipher, settings))


def signer(engine: Engine) -> Ed25519KeyPair:
    """The signing key for records of this database. Call it before opening the transaction."""
    with _signers_lock:
        found = _signers.get(engine)
    if found is None:
        raise RuntimeError(
            "the audit trail has no signer for this database: "
            "call store.audit.use_signer(engine, ...) where the engine is made"
        )
    return found()


# --- writing ------------------------------------------------------------------------------------


def record_hash(document: Mapping[str, Any]) -> str:
    return hashlib.sha256(canonicalize(dict(document))).hexdigest()


def document_of(row: Any) -> dict[str, Any]:
    """The signed document of a stored record (a row of ``audit_record``), proof included."""
    doc: dict[str, Any] = {
        "id": row.id,
        "type": row.type,
        "organizationId": row.organization_id,
        "seq": row.seq,
        "createdAt": _timestamp(row.created_at),
    }
    optional = {"requestId": row.request_id, "credentialId": row.credential_id, "actor": row.actor}
    doc.update({name: value for name, value in optional.items() if value is not None})
    doc.update({"data": row.data, "prevHash": row.prev_hash, "proof": row.proof})
    return doc


def moment(value: datetime | None) -> str | None:
    """A date-time as a record's data gives it, like its ``createdAt`` (RFC 3339 UTC to the
    microsecond; naive means UTC, as SQLite reads it back), None for none: a change's value and its
    ``previous`` alike."""
    if value is None:
        return None
    return _timestamp(value.astimezone(UTC) if value.tzinfo else value.replace(tzinfo=UTC))


def _timestamp(moment: datetime) -> str:
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _first_head(dialect: str) -> Prepared:
    found = _first_heads.get(dialect)
    if found is None:
        found = _first_heads[dialect] = Prepared(
            upsert_insert(dialect)(_HEADS)
            .values(organization_id=bindparam("org"), seq=0, hash="")
            .on_conflict_do_nothing()
        )
    return found


def _head(conn: Connection, org_id: str) -> tuple[int, str | None]:
    """The chain's end, locked for this transaction (the row is made on the first append)."""
    query = _READ_HEAD if conn.dialect.name == "sqlite" else _LOCK_HEAD
    found = query.run(conn, {"org": org_id}).first()
    if found is None:  # the organization's first record: make its head, then lock it
        _first_head(conn.dialect.name).run(conn, {"org": org_id})
        found = query.run(conn, {"org": org_id}).one()
    return int(found.seq), (found.hash or None)


def representable(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with every member JCS cannot canonicalize (a caller's integer beyond 2^53, a lone
    surrogate, nesting deeper than Python recurses) replaced by a note with the SHA-256 of its
    JSON text, so that whatever a caller sent, its record can be written and checked."""
    out: dict[str, Any] = {}
    for name, value in data.items():
        try:
            canonicalize(value)
            out[name] = value
        except (CanonicalizationError, RecursionError):
            try:
                text = json.dumps(value, sort_keys=True, ensure_ascii=True, allow_nan=True)
            except (TypeError, ValueError, RecursionError):
                text = repr(value)
            out[name] = {
                "omitted": "not representable in JCS (RFC 8785)",
                "sha256": hashlib.sha256(text.encode("utf-8", "replace")).hexdigest(),
            }
    return out


def _signed(
    record: SimpleNamespace, key: Ed25519KeyPair, members: dict[str, bytes]
) -> tuple[dict[str, Any], bytes]:
    """The record's proof, and the JCS bytes of its whole document (proof included), which its
    ``hash`` covers: ``members`` are its members already encoded (``draft``), the chain's two
    encoded here, so each member is encoded once, for the signature and for the hash."""
    members = {**members, "seq": canonicalize(record.seq), "prevHash": canonicalize(record.prev_hash)}
    proof = create_proof(
        document_of(record),
        key,
        proof_purpose=ASSERTION_METHOD,
        created=record.created_at,
        canonical_document=canonical_object(members),
    )
    members["proof"] = canonicalize(proof)
    return proof, canonical_object(members)


def _canonical_members(document: Mapping[str, Any]) -> dict[str, bytes]:
    return {name: canonicalize(value) for name, value in document.items() if name != "proof"}


@dataclass
class Draft:
    """A record before its place in its chain: everything but ``seq`` and ``prevHash``, its members
    encoded already, so that only those two and the signature wait for the chain's head."""

    record: SimpleNamespace
    members: dict[str, bytes]


def draft(entry: Entry, now: datetime | None = None) -> Draft:
    """The record of ``entry`` as ``Chains.add`` will place and sign it. A value in its data that
    JCS cannot hold is replaced by its digest (``representable``)."""
    if entry.type not in RECORD_TYPES:
        raise ValueError(f"unknown audit record type {entry.type!r}")
    record = SimpleNamespace(
        id=f"urn:via:audit:{uuid.uuid4()}",
        organization_id=entry.organization_id,
        seq=0,
        type=entry.type,
        request_id=entry.request_id,
        credential_id=entry.credential_id,
        actor=entry.actor,
        data=dict(entry.data),
        created_at=now or utcnow(),
        prev_hash=None,
        proof={},
    )
    try:
        members = _canonical_members(document_of(record))
    except (CanonicalizationError, RecursionError):  # a caller's value JCS cannot hold: its digest
        record.data = representable(record.data)
        members = _canonical_members(document_of(record))
    del members["seq"], members["prevHash"]
    return Draft(record, members)


class Chains:
    """The appends of one transaction: each chain's head read (and on PostgreSQL locked) once, its
    records inserted together and its head moved once (``write``), so that a batch of records
    holds the head for a few round trips instead of four per record."""

    def __init__(self, conn: Connection) -> None:
        self._conn = conn
        self._heads: dict[str, tuple[int, str | None]] = {}
        self._moved: set[str] = set()
        self._rows: list[dict[str, Any]] = []

    def lock(self, org_ids: Iterable[str]) -> None:
        """Lock the chains of ``org_ids`` now, in one order (by organization id): transactions
        that append to several chains then never wait on each other in a cycle."""
        for org_id in sorted(set(org_ids) - self._heads.keys()):
            self._heads[org_id] = _head(self._conn, org_id)

    def add(self, key: Ed25519KeyPair, entry: Entry | Draft, now: datetime | None = None) -> str:
        """The record of ``entry`` (or of its ``draft``, made before the head was locked) after
        the chain's last one, signed; its id. How long it took (with the wait for the head's lock
        when this call takes it) goes to ``mandatum_audit_append_seconds``."""
        began = time.perf_counter()
        drafted = entry if isinstance(entry, Draft) else draft(entry, now)
        record = drafted.record
        self.lock([record.organization_id])
        seq, record.prev_hash = self._heads[record.organization_id]
        record.seq = seq + 1
        record.proof, canonical = _signed(record, key, drafted.members)
        record.hash = hashlib.sha256(canonical).hexdigest()
        # its data stored as the JCS text it was signed over, not encoded a second time
        self._rows.append({**vars(record), "data": Encoded(drafted.members["data"].decode())})
        self._heads[record.organization_id] = (record.seq, record.hash)
        self._moved.add(record.organization_id)
        AUDIT_APPEND.observe(time.perf_counter() - began)
        return str(record.id)

    def write(self) -> None:
        """Insert the records added so far and move their chains' heads."""
        for row in self._rows:  # sent: in a pipeline (store.prepared) they go with the COMMIT
            _INSERT.send(self._conn, row)
        for org_id in sorted(self._moved):
            seq, hash_ = self._heads[org_id]
            _MOVE_HEAD.send(self._conn, {"org": org_id, "seq": seq, "hash": hash_})
        self._rows, self._moved = [], set()


def append(conn: Connection, key: Ed25519KeyPair, entry: Entry, now: datetime | None = None) -> str:
    """Append ``entry`` to its organization's chain inside the caller's transaction; its id."""
    chains = Chains(conn)
    record_id = chains.add(key, entry, now)
    chains.write()
    return record_id


# --- checking -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Broken:
    """The first record of a chain that does not check, and why."""

    organization_id: str
    record_id: str | None
    seq: int | None
    problem: str

    def __str__(self) -> str:
        where = f"record {self.record_id} (seq {self.seq})" if self.record_id else "the chain's end"
        return f"organization {self.organization_id}: {where}: {self.problem}"


@dataclass(frozen=True)
class ChainCheck:
    organization_id: str
    records: int
    broken: Broken | None


def _problem(
    row: Any,
    expected_seq: int,
    prev_hash: str | None,
    resolver: Any,
    issuer_did: str,
    earlier_issuer: Callable[[str], bool],
) -> str | None:
    if row.seq != expected_seq:
        return (
            f"seq {row.seq} where {expected_seq} was expected: a record before it is missing, "
            f"or the records were reordered"
        )
    check = check_record(row, prev_hash, resolver, issuer_did, earlier_issuer)
    if not check.link_valid:
        return "prevHash is not the hash of the record before it (a record was changed, removed or moved)"
    if not check.content_valid:
        return "its content does not match its hash (the record was edited)"
    return check.signature_problem


@dataclass(frozen=True)
class RecordCheck:
    """What one record proves on its own and against the record before it in its chain."""

    content_valid: bool  # its content matches its hash
    signature_problem: str | None  # why it is not signed by the service, or does not verify
    link_valid: bool  # prevHash is the hash of the record before it

    @property
    def signature_valid(self) -> bool:
        """Signed by the service (now or under an earlier public URL), and it verifies."""
        return self.signature_problem is None

    @property
    def ok(self) -> bool:
        return self.content_valid and self.signature_valid and self.link_valid


def check_record(
    row: Any,
    prev_hash: str | None,
    resolver: Any,
    issuer_did: str,
    earlier_issuer: Callable[[str], bool] = lambda _: False,
) -> RecordCheck:
    """One record's own checks; ``prev_hash`` is the hash of the record at ``seq - 1`` (None for
    the first record of a chain, or when that record is missing). ``check_chain`` walks a chain
    with it; ``GET /credential/{id}/events`` shows it per record."""
    document = document_of(row)
    method = str((row.proof or {}).get("verificationMethod", ""))
    signature_problem = None
    if method.split("#", 1)[0] != issuer_did and not earlier_issuer(method):
        signature_problem = f"signed by {method or 'nobody'}, not by the service {issuer_did}"
    else:
        try:
            verify_document(document, resolver, proof_purpose=ASSERTION_METHOD)
        except ProofError as exc:
            signature_problem = f"its signature does not verify ({exc.code})"
    return RecordCheck(
        content_valid=record_hash(document) == row.hash,
        signature_problem=signature_problem,
        link_valid=row.prev_hash == prev_hash and (row.seq == 1) == (prev_hash is None),
    )


def check_chain(
    rows: Iterator[Any],
    head: Any,
    organization_id: str,
    resolver: Any,
    issuer_did: str,
    earlier_issuer: Callable[[str], bool] = lambda _: False,
) -> ChainCheck:
    """Walk one organization's records in ``seq`` order against its head. ``earlier_issuer`` says
    whether a verification method that is not under ``issuer_did`` is still the service's (one of
    its keys under an earlier public URL); ``resolver`` must then resolve it."""
    count, prev_hash, last_seq = 0, None, 0
    for row in rows:
        count += 1
        problem = _problem(row, last_seq + 1, prev_hash, resolver, issuer_did, earlier_issuer)
        if problem is not None:
            return ChainCheck(organization_id, count, Broken(organization_id, row.id, row.seq, problem))
        prev_hash, last_seq = row.hash, row.seq
    head_seq, head_hash = (head.seq, head.hash or None) if head is not None else (0, None)
    if (head_seq, head_hash) != (last_seq, prev_hash):
        return ChainCheck(
            organization_id,
            count,
            Broken(
                organization_id,
                None,
                None,
                f"the head says seq {head_seq} but the last record is seq {last_seq}: "
                f"newest records were removed or the head was changed",
            ),
        )
    return ChainCheck(organization_id, count, None)
