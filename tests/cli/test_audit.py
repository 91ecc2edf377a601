"""``mandatum audit verify`` and the public URL (issue 12, item 17): every command derives the URL
as ``make run`` does, and a chain signed under an earlier public URL of the same service key still
verifies, while a key that is not the service's does not."""

from __future__ import annotations

import json
import os
from pathlib import Path

from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import audit
from store.audit_queries import verify_chains
from store.db import write_connection
from tests.conftest import MASTER_KEY, new_org
from tests.support.audit import new_request
from tests.support.cli import run_cli
from trust.did import web_service_did
from trust.keys import Ed25519KeyPair


def _append(engine: Engine, key: Ed25519KeyPair, org_id: str, n: int) -> None:
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


def test_a_chain_signed_under_earlier_public_urls_still_verifies(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    org_id = new_org(engine, cipher, settings).organization_id
    key = audit.signer(engine)
    for earlier in ("did:web:127.0.0.1%3A8001", "did:web:old.mandatum.example"):
        _append(engine, key.with_verification_method(f"{earlier}#{key.public_multikey}"), org_id, 2)
    new_request(engine, org_id)  # and one under today's URL
    [check] = verify_chains(engine, settings, org_id)
    assert check.broken is None and check.records == 5
    # the same chain, checked by a command that sees yet another URL
    moved = settings.model_copy(update={"public_url": "http://localhost:9000"})
    assert verify_chains(engine, moved, org_id)[0].broken is None


def test_a_foreign_key_under_a_did_web_is_still_refused(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    ours = audit.signer(engine)
    forger = Ed25519KeyPair.generate()
    cases = [
        # a key that is not the service's, under a host name
        forger.with_verification_method(f"did:web:evil.example#{forger.public_multikey}"),
        # the service key's id, signed by another key: the signature does not verify
        forger.with_verification_method(f"did:web:evil.example#{ours.public_multikey}"),
        # the service key, but under a DID with a path (an organization's): not the service's DID
        ours.with_verification_method(
            f"{web_service_did(settings.public_url)}:orgs:{'0' * 24}#{ours.public_multikey}"
        ),
    ]
    expected = ["not by the service", "signature does not verify", "not by the service"]
    for key, problem in zip(cases, expected, strict=True):
        org_id = new_org(engine, cipher, settings).organization_id
        new_request(engine, org_id)
        _append(engine, key, org_id, 1)
        [check] = verify_chains(engine, settings, org_id)
        assert check.broken is not None and check.broken.seq == 2, key.verification_method
        assert problem in check.broken.problem, check.broken.problem


def test_audit_verify_of_a_stack_on_another_port(
    tmp_path: Path, engine: Engine, settings: Settings, cipher: SecretCipher
) -> None:
    """``make run`` with MANDATUM_API_PORT=8123 signs as did:web:127.0.0.1%3A8123; the command, given
    the same environment and no MANDATUM_PUBLIC_URL, derives the same DID and finds the chain whole."""
    did = "did:web:127.0.0.1%3A8123"
    org_id = new_org(engine, cipher, settings).organization_id
    key = audit.signer(engine)
    _append(engine, key.with_verification_method(f"{did}#{key.public_multikey}"), org_id, 3)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
    env.update(
        MANDATUM_DATABASE_URL=settings.database_url,
        MANDATUM_MASTER_KEY=MASTER_KEY,
        MANDATUM_VAR_DIR=str(tmp_path),
        MANDATUM_ENVIRONMENT="development",
        MANDATUM_API_PORT="8123",
    )
    run = run_cli(["audit", "verify", "--org", org_id, "--json"], env)
    assert run.returncode == 0, run.stdout + run.stderr
    assert json.loads(run.stdout)["ok"] is True
    listed = run_cli(["org", "list", "--json"], env)
    assert listed.returncode == 0, listed.stderr
    dids = {o["organizationId"]: o["did"] for o in json.loads(listed.stdout)}
    assert dids[org_id] == f"{did}:orgs:{org_id}"
