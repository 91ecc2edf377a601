"""Tampering with the audit trail in the database is found and named by ``mandatum audit verify``;
concurrent writers of one organization still make one valid chain (SQLite and PostgreSQL)."""

from __future__ import annotations

import importlib
import os
import subprocess
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import pytest
from sqlalchemy import Engine, delete, text, update
from sqlalchemy.exc import DBAPIError

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from store.audit_queries import verify_chains
from store.db import write_connection
from store.tables import AuditHead, AuditRecord
from tests.conftest import MASTER_KEY, new_org
from tests.support.api_client import Credentials
from tests.support.audit import chain, new_request, tamper
from tests.support.cli import run_cli
from trust.jcs import canonicalize

WRITERS = 20


def _entries(engine: Engine, org_id: str, n: int) -> list[AuditRecord]:
    key = audit.signer(engine)
    for i in range(n):
        with write_connection(engine) as conn:
            audit.append(
                conn,
                key,
                audit.Entry(
                    audit.VP_ISSUE_DENIED,
                    org_id,
                    credential_id=f"c{i}",
                    data={"reason": "credential_not_found", "n": i},
                ),
            )
    return chain(engine, org_id)


def _run_verify(settings: Settings, org_id: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
    env.update(
        MANDATUM_DATABASE_URL=settings.database_url or "",
        MANDATUM_MASTER_KEY=MASTER_KEY,
        MANDATUM_VAR_DIR=str(settings.var_dir),
        MANDATUM_PUBLIC_URL=settings.public_url,
        MANDATUM_ENVIRONMENT="test",
    )
    return run_cli(["audit", "verify", "--org", org_id], env)


MIGRATION = importlib.import_module("store.migrations.versions.0005_audit")


@pytest.mark.parametrize(
    "change",
    [
        lambda record_id: update(AuditRecord).where(AuditRecord.id == record_id).values(actor="x"),
        lambda record_id: delete(AuditRecord).where(AuditRecord.id == record_id),
    ],
)
def test_records_cannot_be_changed_or_removed(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    change: Callable[[str], object],
) -> None:
    org = new_org(engine, cipher, settings)
    [record] = _entries(engine, org.organization_id, 1)
    with pytest.raises(DBAPIError, match=MIGRATION.APPEND_ONLY), write_connection(engine) as conn:
        conn.execute(change(record.id))  # type: ignore[call-overload]
    assert chain(engine, org.organization_id)[0].actor == record.actor


def _edit_data(engine: Engine, records: list[AuditRecord]) -> str:
    tamper(
        engine,
        update(AuditRecord)
        .where(AuditRecord.id == records[2].id)  # type: ignore[arg-type]
        .values(data={"reason": "credential_not_found", "n": 99}),
    )
    return records[2].id


def _edit_and_rehash(engine: Engine, records: list[AuditRecord]) -> str:
    """The record is edited and its hash recomputed (and the next prevHash fixed): only the
    signature can tell."""
    changed = records[3].model_copy(update={"actor": "apiKey:someone-else"})
    new_hash = audit.record_hash(audit.document_of(changed))
    tamper(
        engine,
        update(AuditRecord)
        .where(AuditRecord.id == changed.id)  # type: ignore[arg-type]
        .values(actor=changed.actor, hash=new_hash),
    )
    tamper(
        engine,
        update(AuditRecord)
        .where(AuditRecord.id == records[4].id)  # type: ignore[arg-type]
        .values(prev_hash=new_hash),
    )
    return changed.id


def _delete_middle(engine: Engine, records: list[AuditRecord]) -> str:
    tamper(engine, delete(AuditRecord).where(AuditRecord.id == records[2].id))  # type: ignore[arg-type]
    return records[3].id  # the first record that no longer follows its predecessor


def _swap(engine: Engine, records: list[AuditRecord]) -> str:
    """Records 2 and 3 trade places (their seq), through a free seq for the unique index."""
    a, b = records[1], records[2]
    for record_id, seq in ((a.id, -1), (b.id, a.seq), (a.id, b.seq)):
        tamper(
            engine,
            update(AuditRecord)
            .where(AuditRecord.id == record_id)  # type: ignore[arg-type]
            .values(seq=seq),
        )
    return b.id  # now at seq 2, it is the first out of place


def _delete_newest(engine: Engine, records: list[AuditRecord]) -> str:
    tamper(engine, delete(AuditRecord).where(AuditRecord.id == records[-1].id))  # type: ignore[arg-type]
    return "the chain's end"


def _reset_head(engine: Engine, records: list[AuditRecord]) -> str:
    tamper(
        engine,
        update(AuditHead)
        .where(AuditHead.organization_id == records[0].organization_id)  # type: ignore[arg-type]
        .values(seq=len(records) + 1),
    )
    return "the chain's end"


@pytest.mark.parametrize(
    "tamper", [_edit_data, _edit_and_rehash, _delete_middle, _swap, _delete_newest, _reset_head]
)
def test_tampering_is_found_and_named(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    tamper: Callable[..., str],
) -> None:
    org = new_org(engine, cipher, settings)
    records = _entries(engine, org.organization_id, 6)
    assert verify_chains(engine, settings, org.organization_id)[0].broken is None
    named = tamper(engine, records)
    [check] = verify_chains(engine, settings, org.organization_id)
    assert check.broken is not None
    assert (check.broken.record_id or "the chain's end") == named
    assert named in str(check.broken)


def test_the_command_names_the_broken_record(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    tamper = _edit_data
    org = new_org(engine, cipher, settings)
    records = _entries(engine, org.organization_id, 4)
    clean = _run_verify(settings, org.organization_id)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert f"organization {org.organization_id}: 4 records checked, ok" in clean.stdout
    named = tamper(engine, records)
    found = _run_verify(settings, org.organization_id)
    assert found.returncode == 1, found.stdout + found.stderr
    assert "BROKEN" in found.stdout and named in found.stdout, found.stdout


def test_a_record_signed_by_another_key_is_named(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """A forger who rewrites a record must sign it; a key that is not the service's is refused."""
    from trust.eddsa_jcs import sign_document
    from trust.keys import Ed25519KeyPair

    org = new_org(engine, cipher, settings)
    records = _entries(engine, org.organization_id, 3)
    forger = Ed25519KeyPair.generate()
    did = f"did:key:{forger.public_multikey}"
    forged = sign_document(
        audit.document_of(records[1]),
        forger.with_verification_method(f"{did}#{forger.public_multikey}"),
        proof_purpose="assertionMethod",
        created=records[1].created_at,
    )
    new_hash = audit.record_hash(forged)
    tamper(
        engine,
        update(AuditRecord)
        .where(AuditRecord.id == records[1].id)  # type: ignore[arg-type]
        .values(proof=forged["proof"], hash=new_hash),
    )
    tamper(
        engine,
        update(AuditRecord)
        .where(AuditRecord.id == records[2].id)  # type: ignore[arg-type]
        .values(prev_hash=new_hash),
    )
    [check] = verify_chains(engine, settings, org.organization_id)
    assert check.broken is not None and check.broken.record_id == records[1].id
    assert "not by the service" in check.broken.problem


def test_concurrent_writers_of_one_organization_make_one_chain(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    org = new_org(engine, cipher, settings)
    start = threading.Barrier(WRITERS)
    key = audit.signer(engine)

    def write(i: int) -> None:
        start.wait()
        with write_connection(engine) as conn:
            audit.append(
                conn, key, audit.Entry(audit.VP_ISSUE_DENIED, org.organization_id, data={"writer": i})
            )

    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(write, range(WRITERS)))
    records = chain(engine, org.organization_id)
    assert [r.seq for r in records] == list(range(1, WRITERS + 1))
    assert sorted(r.data["writer"] for r in records) == list(range(WRITERS))
    [check] = verify_chains(engine, settings, org.organization_id)
    assert check.broken is None and check.records == WRITERS


def test_concurrent_request_creations_chain_their_records(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """The intake path writes "request created" in the creation's transaction, 20 at once."""
    org: Credentials = new_org(engine, cipher, settings)
    start = threading.Barrier(WRITERS)

    def create(i: int) -> str:
        start.wait()
        return str(new_request(engine, org.organization_id, (f"user{i}@example.com",)).request.id)

    with ThreadPoolExecutor(WRITERS) as pool:
        created = set(pool.map(create, range(WRITERS)))
    records = chain(engine, org.organization_id)
    assert {r.request_id for r in records} == created and len(records) == WRITERS
    assert verify_chains(engine, settings, org.organization_id)[0].broken is None
    assert len({r.hash for r in records}) == WRITERS


def test_the_chain_head_is_one_row_per_organization(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    org = new_org(engine, cipher, settings)
    _entries(engine, org.organization_id, 2)
    with engine.connect() as conn:
        heads = conn.execute(
            text("SELECT seq FROM audit_head WHERE organization_id = :o"), {"o": org.organization_id}
        ).all()
    assert [h.seq for h in heads] == [2]


def test_a_records_data_is_stored_as_the_jcs_text_it_was_signed_over(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    """Encoded once (``store.prepared.Encoded``): the stored text is the canonical form, keys sorted
    and compact, and it reads back as the data given."""
    org = new_org(engine, cipher, settings)
    [record] = _entries(engine, org.organization_id, 1)
    with engine.connect() as conn:
        stored = conn.execute(
            text("SELECT CAST(data AS TEXT) FROM audit_record WHERE id = :id"), {"id": record.id}
        ).scalar_one()
    assert stored == '{"n":0,"reason":"credential_not_found"}' == canonicalize(record.data).decode()
    assert record.data == {"reason": "credential_not_found", "n": 0}
