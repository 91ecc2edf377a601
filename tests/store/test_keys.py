"""Signing keys: stored encrypted, one active key per owner under any concurrency, rotation that
keeps old signatures verifiable, our DID documents, the `mandatum keys` commands, and the master
key that production cannot do without."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
from pydantic import ValidationError
from sqlalchemy import Engine, text
from sqlalchemy.exc import IntegrityError

from api.app import create_app
from core.ids import new_object_id
from core.secretbox import SecretCipher
from core.settings import Environment, Settings, get_settings
from store import keys
from store.db import make_engine, migrate, utcnow, write_session
from store.orgs import NotFound
from store.tables import SigningKey, Subject
from tests.conftest import MASTER_KEY, PG_AVAILABLE, _postgres_database
from tests.support.api_client import Credentials
from tests.support.cli import run_cli
from trust.did import UnknownVerificationMethod, web_organization_did, web_service_did, web_subject_did
from trust.keys import Ed25519KeyPair, verify_signature

T = TypeVar("T")


def _all_at_once(n: int, call: Callable[[int], T]) -> list[T]:
    """``call(i)`` in n threads released together; re-raises the first failure."""
    barrier = threading.Barrier(n)
    results: list[Any] = [None] * n

    def run(i: int) -> None:
        barrier.wait()
        try:
            results[i] = call(i)
        except BaseException as exc:  # handed to the test thread
            results[i] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    for r in results:
        if isinstance(r, BaseException):
            raise r
    return results


@pytest.fixture(params=["sqlite", "postgresql"])
def fresh(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[tuple[str, Settings]]:
    """An empty migrated database (no service key yet) and settings for it."""

    def settings_for(url: str) -> Settings:
        return Settings(
            environment=Environment.TEST,
            var_dir=tmp_path,
            database_url=url,
            master_key=MASTER_KEY,
            public_url="https://fresh.mandatum.test",
        )

    if request.param == "postgresql":
        if not PG_AVAILABLE:
            pytest.skip("PostgreSQL is not reachable: PostgreSQL variant skipped")
        with _postgres_database() as url:
            migrate(url)
            yield url, settings_for(url)
        return
    url = f"sqlite:///{tmp_path / 'fresh.db'}"
    migrate(url)
    yield url, settings_for(url)


def _rows(engine: Engine, owner: str) -> list[SigningKey]:
    return keys.list_signing_keys(engine, owner)


# ---- storage ---------------------------------------------------------------------------------


def test_private_keys_are_stored_only_encrypted(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    pairs = [
        keys.service_signing_key(engine, cipher, settings),
        keys.organization_signing_key(engine, cipher, settings, org.organization_id),
    ]
    with engine.connect() as conn:
        dump = b"".join(
            v if isinstance(v, bytes | memoryview) else str(v).encode()
            for row in conn.execute(text("SELECT * FROM signing_key"))
            for v in row
        )
    for pair in pairs:
        assert pair.public_multikey.encode() in dump  # the scan does see the rows
        for secret in (
            pair.seed,
            pair.seed.hex().encode(),
            base64.b64encode(pair.seed),
            pair.private_multikey.encode(),
        ):
            assert secret not in dump
    stored = {r.public_multikey: r for r in _rows(engine, org.organization_id)}
    row = stored[pairs[1].public_multikey]
    assert cipher.decrypt(row.private_key_ciphertext) == pairs[1].private_multikey
    other = SecretCipher(b"x" * 32)
    with pytest.raises(Exception):  # noqa: B017 - any failure: another master key cannot read it
        other.decrypt(row.private_key_ciphertext)


def test_keys_sign_as_their_did_key_ids(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    service = keys.service_signing_key(engine, cipher, settings)
    assert service.verification_method == f"did:web:mandatum.test#{service.public_multikey}"
    own = keys.organization_signing_key(engine, cipher, settings, org.organization_id)
    assert own.verification_method == f"{org.did}#{own.public_multikey}"
    # stable: a second call returns the same key, not a new one
    assert keys.organization_signing_key(engine, cipher, settings, org.organization_id) == own
    with pytest.raises(NotFound):
        keys.organization_signing_key(engine, cipher, settings, new_object_id())


def test_one_active_key_per_owner_is_enforced_by_the_database(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    keys.organization_signing_key(engine, cipher, settings, org.organization_id)
    pair = Ed25519KeyPair.generate()
    with pytest.raises(IntegrityError), write_session(engine) as session:
        session.add(
            SigningKey(
                id=new_object_id(),
                owner=org.organization_id,
                public_multikey=pair.public_multikey,
                private_key_ciphertext=cipher.encrypt(pair.private_multikey),
                status=keys.ACTIVE,
                created_at=utcnow(),
            )
        )


# ---- concurrency -----------------------------------------------------------------------------


def test_concurrent_first_use_makes_one_service_key(fresh: tuple[str, Settings]) -> None:
    """Eight "processes" (one engine each, so SQLite's in-process writer lock does not help)."""
    url, settings = fresh
    cipher = SecretCipher(settings.master_key_bytes())
    engines = [make_engine(url) for _ in range(8)]
    try:
        got = _all_at_once(8, lambda i: keys.service_signing_key(engines[i], cipher, settings))
        assert len({p.public_multikey for p in got}) == 1
        rows = _rows(engines[0], keys.SERVICE_OWNER)
        assert [(r.public_multikey, r.status) for r in rows] == [(got[0].public_multikey, "active")]

        # concurrent rotations all land, one after the other: one active key, the rest retired
        rotations = _all_at_once(4, lambda i: keys.rotate_service_key(engines[i], cipher, settings))
        rows = _rows(engines[0], keys.SERVICE_OWNER)
        assert [r.status for r in rows] == ["active"] + ["retired"] * 4
        assert sorted(r.retired_listed for r in rotations) == [1, 2, 3, 4]
        assert rows[0].public_multikey in {r.key.public_multikey for r in rotations}
    finally:
        for e in engines:
            e.dispose()


def test_concurrent_first_use_makes_one_organization_key(
    db_url: str, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    engines = [make_engine(db_url) for _ in range(6)]
    try:
        got = _all_at_once(
            6, lambda i: keys.organization_signing_key(engines[i], cipher, settings, org.organization_id)
        )
        assert len({p.public_multikey for p in got}) == 1
        assert len(_rows(engines[0], org.organization_id)) == 1
    finally:
        for e in engines:
            e.dispose()


# ---- rotation and resolution -----------------------------------------------------------------


@pytest.mark.parametrize("owner", ["service", "organization"])
def test_rotation_keeps_old_signatures_verifiable(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, owner: str
) -> None:
    if owner == "service":

        def current() -> Ed25519KeyPair:
            return keys.service_signing_key(engine, cipher, settings)

        def rotate() -> keys.Rotation:
            return keys.rotate_service_key(engine, cipher, settings)

        did = web_service_did(settings.public_url)
    else:

        def current() -> Ed25519KeyPair:
            return keys.organization_signing_key(engine, cipher, settings, org.organization_id)

        def rotate() -> keys.Rotation:
            return keys.rotate_organization_key(engine, cipher, settings, org.organization_id)

        did = org.did
    resolver = keys.did_resolver(engine, settings)
    old = current()
    message = b"signed before the rotation"
    old_signature = old.sign(message)
    resolver.public_key(old.verification_method, "assertionMethod")  # now cached in this process

    before = keys.did_document_for(engine, settings, did)
    assert before is not None
    rotation = rotate()
    new = current()
    assert new == rotation.key and new.public_multikey != old.public_multikey
    assert rotation.retired_listed == len(before["verificationMethod"])

    document = keys.did_document_for(engine, settings, did)
    assert document is not None
    ids = [m["id"] for m in document["verificationMethod"]]
    assert ids[0] == new.verification_method  # the active key first
    assert ids[1:] == [m["id"] for m in before["verificationMethod"]]  # every old key still listed
    assert document["assertionMethod"] == document["authentication"] == ids

    # an old signature still verifies; a new one is made, and verifies, with the new key
    for relationship in ("assertionMethod", "authentication"):
        assert verify_signature(
            resolver.public_key(old.verification_method, relationship), message, old_signature
        )
        fresh_message = b"signed after the rotation"
        assert verify_signature(
            resolver.public_key(new.verification_method, relationship), fresh_message, new.sign(fresh_message)
        )
    assert not verify_signature(
        resolver.public_key(new.verification_method, "assertionMethod"), message, old_signature
    )
    with pytest.raises(UnknownVerificationMethod):
        resolver.public_key(f"{did}#{Ed25519KeyPair.generate().public_multikey}", "assertionMethod")


def test_a_key_rotated_by_another_process_verifies_and_is_published_at_once(
    engine: Engine, cipher: SecretCipher, settings: Settings, db_url: str
) -> None:
    """Another process = another engine: this process's document cache never saw the change."""
    resolver = keys.did_resolver(engine, settings)
    old = keys.service_signing_key(engine, cipher, settings)
    resolver.public_key(old.verification_method, "assertionMethod")  # warm this process's cache
    other = make_engine(db_url)
    try:
        new = keys.rotate_service_key(other, cipher, settings).key
    finally:
        other.dispose()
    message = b"signed by the other process with its new key"
    assert verify_signature(
        resolver.public_key(new.verification_method, "assertionMethod"), message, new.sign(message)
    )
    published = keys.service_did_document(engine, cipher, settings)  # what the route serves
    assert published["verificationMethod"][0]["id"] == new.verification_method
    assert old.verification_method in published["assertionMethod"]


def test_did_documents_for_our_dids_only(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    subject_id = str(uuid.uuid4())
    with write_session(engine) as session:
        session.add(
            Subject(
                id=subject_id,
                organization_id=org.organization_id,
                contact=f"{subject_id}@example.com",
                contact_kind="email",
                created_at=utcnow(),
            )
        )
    subject_did = web_subject_did(settings.public_url, subject_id)
    assert keys.did_document_for(engine, settings, subject_did) == {
        "@context": ["https://www.w3.org/ns/did/v1"],
        "id": subject_did,
    }
    unknown = [
        "did:web:elsewhere.example",
        "did:web:elsewhere.example:orgs:" + org.organization_id,
        web_organization_did(settings.public_url, new_object_id()),
        web_organization_did(settings.public_url, "not-an-id"),
        web_organization_did(settings.public_url, org.organization_id) + ":more",
        web_subject_did(settings.public_url, str(uuid.uuid4())),
        web_subject_did(settings.public_url, subject_id.upper()),
        web_service_did(settings.public_url) + ":other:" + org.organization_id,
        web_service_did(settings.public_url) + "x",
    ]
    for did in unknown:
        assert keys.did_document_for(engine, settings, did) is None, did
    # a known organization without a key yet: a document with no keys, until it gets one
    bare = keys.did_document_for(engine, settings, org.did)
    assert bare is not None and bare["verificationMethod"] == []
    document = keys.organization_did_document(engine, cipher, settings, org.organization_id)
    assert document is not None and len(document["verificationMethod"]) == 1
    # documents handed out are copies: changing one does not change the next
    document["verificationMethod"].clear()
    again = keys.did_document_for(engine, settings, org.did)
    assert again is not None and len(again["verificationMethod"]) == 1


def test_documents_use_the_public_host_and_percent_encode_a_port(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    local = settings.model_copy(update={"public_url": "http://127.0.0.1:8000"})
    document = keys.service_did_document(engine, cipher, local)
    assert document["id"] == "did:web:127.0.0.1%3A8000"
    assert all(
        m["id"].startswith("did:web:127.0.0.1%3A8000#z6Mk") and m["controller"] == "did:web:127.0.0.1%3A8000"
        for m in document["verificationMethod"]
    )
    signer = keys.service_signing_key(engine, cipher, local)
    assert signer.verification_method == f"did:web:127.0.0.1%3A8000#{signer.public_multikey}"


# ---- production and the master key -------------------------------------------------------------


@pytest.fixture
def production_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    for name in list(os.environ):
        if name.startswith("MANDATUM_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("MANDATUM_ENVIRONMENT", "production")
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{tmp_path / 'prod.db'}")
    monkeypatch.setenv("MANDATUM_VAR_DIR", str(tmp_path / "var"))
    get_settings.cache_clear()
    yield
    get_settings.cache_clear()


def test_production_app_refuses_to_start_without_a_master_key(production_env: None, tmp_path: Path) -> None:
    # the way `uvicorn api.app:create_app --factory` starts it: settings from the environment
    with pytest.raises(ValidationError, match="MANDATUM_MASTER_KEY must be set to a real key in production"):
        create_app()
    # settings that skipped validation still cannot reach a key: the app refuses, naming it
    unchecked = Settings.model_construct(
        environment=Environment.PRODUCTION,
        master_key=None,
        var_dir=tmp_path / "var",
        database_url=f"sqlite:///{tmp_path / 'prod.db'}",
    )
    with pytest.raises(ValueError, match="MANDATUM_MASTER_KEY is required in production"):
        create_app(unchecked)
    assert not (tmp_path / "var" / "master.key").exists()  # nothing generated in production


# ---- the `mandatum keys` commands --------------------------------------------------------------


def _cli_env(url: str, var_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
    env.update(
        MANDATUM_DATABASE_URL=url,
        MANDATUM_MASTER_KEY=MASTER_KEY,
        MANDATUM_VAR_DIR=str(var_dir),
        MANDATUM_PUBLIC_URL="https://keys.mandatum.test:8443",
        **extra,
    )
    return env


def _mandatum(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return run_cli(args, env)


def test_keys_commands(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'cli.db'}"
    migrate(url)
    env = _cli_env(url, tmp_path)
    did = "did:web:keys.mandatum.test%3A8443"

    listed = json.loads(_mandatum(env, "keys", "list", "--json").stdout)
    assert listed == {"did": did, "keys": []}
    first = json.loads(_mandatum(env, "keys", "rotate-issuer", "--json").stdout)
    assert first["did"] == did and first["retiredKeysListed"] == 0
    assert first["keyId"] == f"{did}#{first['publicKeyMultibase']}"
    second = _mandatum(env, "keys", "rotate-issuer")
    assert second.returncode == 0, second.stderr
    assert "1 retired key(s) stay listed" in second.stdout
    listed = json.loads(_mandatum(env, "keys", "list", "--json").stdout)
    assert [k["status"] for k in listed["keys"]] == ["active", "retired"]
    assert listed["keys"][1]["keyId"] == first["keyId"] and listed["keys"][1]["retiredAt"]
    text_out = _mandatum(env, "keys", "list").stdout
    assert "active" in text_out and first["publicKeyMultibase"] in text_out

    unknown = _mandatum(env, "keys", "rotate-org", "--org", new_object_id())
    assert unknown.returncode == 1 and "not found" in unknown.stderr

    prod = {k: v for k, v in env.items() if k != "MANDATUM_MASTER_KEY"}
    refused = _mandatum({**prod, "MANDATUM_ENVIRONMENT": "production"}, "keys", "rotate-issuer")
    assert refused.returncode == 1 and "MANDATUM_MASTER_KEY" in refused.stderr


def test_the_resolver_reads_the_cached_document_and_callers_get_copies(
    engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    """The verify path's resolver reads the cached document itself (``shared``); any other caller
    gets a copy, so changing one never changes what the resolver reads."""
    did = web_service_did(settings.public_url)
    keys.service_signing_key(engine, cipher, settings)
    keys.did_document_for(engine, settings, did, fresh=True)
    first = keys.did_document_for(engine, settings, did, shared=True)
    assert first is not None and keys.did_document_for(engine, settings, did, shared=True) is first
    copy = keys.did_document_for(engine, settings, did)
    assert copy == first and copy is not first
    assert copy is not None
    copy["verificationMethod"].clear()
    assert first["verificationMethod"]  # untouched
    keys.rotate_service_key(engine, cipher, settings)  # forgets the cached documents
    after = keys.did_document_for(engine, settings, did, shared=True)
    assert after is not first and after is not None
    assert len(after["verificationMethod"]) == len(first["verificationMethod"]) + 1
