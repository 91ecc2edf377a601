"""POST /credential/{mandateId}/presentation (CONTRACT 4 and 5): a fresh, short-lived VP of a
mandate, signed by the mandate's organization, with a signed PRESENTATION_ISSUED receipt."""

from __future__ import annotations

from datetime import timedelta
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from cli.main import app as cli_app
from core.secretbox import SecretCipher
from core.settings import Settings
from store import presentations
from store.db import read_session
from store.keys import did_resolver
from store.tables import Presentation
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape
from tests.support.audit import chain
from tests.support.mandates import issued_mandate
from tests.support.presentations import path_of, present, presented, revoke_in_db
from trust import credentials as vc
from trust.did import web_service_did
from trust.eddsa_jcs import parse_datetime
from trust.receipts import verify_receipt

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]

DOCUMENT = {
    "type": "DOCUMENT",
    "name": "Lease",
    "data": [{"label": "Address", "type": "text", "value": "Rua 1", "hidden": False}],
}


async def test_a_vp_of_the_mandate_with_its_receipt(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    mandate = await issued_mandate(api, temporal)
    data = await presented(api, mandate["id"])
    vp, receipt = data["presentation"], data["receipt"]
    assert vp["id"].startswith("urn:via:presentation:") and vp["type"] == ["VerifiablePresentation"]
    assert vp["holder"] == api.creds.did and vp["verifiableCredential"] == mandate["w3cCredential"]
    proof = vp["proof"]
    assert proof["proofPurpose"] == "authentication" and proof["cryptosuite"] == "eddsa-jcs-2022"
    assert proof["verificationMethod"].startswith(api.creds.did + "#")
    assert len(proof["challenge"]) >= 22 and "domain" not in proof  # >= 128 bits, unbound
    created, expires = parse_datetime(proof["created"]), parse_datetime(proof["expires"])
    assert expires - created == timedelta(minutes=5)
    resolver = did_resolver(engine, settings)
    assert vc.verify_presentation(vp, resolver, challenge=proof["challenge"]) == mandate["w3cCredential"]

    assert receipt["type"] == "PRESENTATION_ISSUED"
    assert (receipt["credentialId"], receipt["requestId"], receipt["presentationId"]) == (
        mandate["id"],
        mandate["requestId"],
        vp["id"],
    )
    assert "verifier" not in receipt
    verify_receipt(receipt, resolver, issuer_did=web_service_did(settings.public_url))
    with read_session(engine) as session:
        row = session.get(Presentation, vp["id"])
    assert row is not None and row.challenge == proof["challenge"] and row.used_at is None
    assert row.expires_at == expires and row.organization_id == api.creds.organization_id
    assert row.receipt == receipt


async def test_each_vp_is_fresh_and_the_alias_and_encodings_work(api: SignedClient, temporal: Any) -> None:
    mandate = await issued_mandate(api, temporal)
    first = (await presented(api, mandate["id"]))["presentation"]
    alias = await present(api, mandate["id"], {}, alias=True)
    plain = await api.post(f"/credential/{mandate['id']}/presentation")  # not percent-encoded
    twice = await api.post(f"/credential/{quote(path_of(mandate['id']), safe='')}/presentation")
    vps = [first] + [r.json()["data"]["presentation"] for r in (alias, plain, twice)]
    assert len({vp["id"] for vp in vps}) == 4
    assert len({vp["proof"]["challenge"] for vp in vps}) == 4


async def test_target_verifier_binds_the_vp(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    mandate = await issued_mandate(api, temporal)
    target = "did:web:verifier.example.com"
    data = await presented(api, mandate["id"], targetVerifier=target)
    vp = data["presentation"]
    assert vp["proof"]["domain"] == target and data["receipt"]["verifier"] == target
    resolver = did_resolver(engine, settings)
    vc.verify_presentation(vp, resolver, challenge=vp["proof"]["challenge"], domain=target)
    with pytest.raises(vc.ProofError):
        vc.verify_presentation(vp, resolver, challenge=vp["proof"]["challenge"], domain="did:web:other")
    verify_receipt(data["receipt"], resolver, issuer_did=web_service_did(settings.public_url))


@pytest.mark.parametrize(
    "body",
    [{"targetVerifier": "https://verifier.example.com"}, {"targetVerifier": 7}, {"audience": "did:web:x"}],
)
async def test_a_bad_body_is_a_400(api: SignedClient, temporal: Any, body: dict[str, Any]) -> None:
    mandate = await issued_mandate(api, temporal)
    assert_error_shape(await present(api, mandate["id"], body), 400)


async def test_the_lifetime_is_the_organizations_setting(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
) -> None:
    mandate = await issued_mandate(api, temporal)
    presentations.set_presentation_minutes(engine, api.creds.organization_id, 17, actor="operator:tests")
    proof = (await presented(api, mandate["id"]))["presentation"]["proof"]
    assert parse_datetime(proof["expires"]) - parse_datetime(proof["created"]) == timedelta(minutes=17)
    for wrong in (0, 61):
        with pytest.raises(ValueError):
            presentations.set_presentation_minutes(
                engine, api.creds.organization_id, wrong, actor="operator:tests"
            )


def test_the_lifetime_command(
    monkeypatch: pytest.MonkeyPatch,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    org = new_org(engine, cipher, settings)
    monkeypatch.setattr("cli.common.get_settings", lambda: settings)
    runner = CliRunner()
    done = runner.invoke(
        cli_app, ["org", "set-presentation-minutes", "--org", org.organization_id, "--minutes", "60"]
    )
    assert done.exit_code == 0, done.output
    assert "60 minutes" in done.output
    refused = runner.invoke(
        cli_app, ["org", "set-presentation-minutes", "--org", org.organization_id, "--minutes", "90"]
    )
    assert refused.exit_code == 1 and "1 to 60 minutes" in refused.output
    unknown = runner.invoke(cli_app, ["org", "set-presentation-minutes", "--org", "0" * 24, "--minutes", "3"])
    assert unknown.exit_code == 1 and "not found" in unknown.output
    from store.orgs import get_organization

    assert get_organization(engine, org.organization_id).presentation_minutes == 60


async def test_another_organizations_mandate_is_unknown_unless_it_lists_the_caller(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """CONTRACT 2: another organization's resource is a 404, never a 403 that says it exists; an
    organization the mandate lists in its authorizedDIDs is a party to it and gets the VP."""
    agent, stranger = (SignedClient(http, new_org(engine, cipher, settings)) for _ in range(2))
    mandate = await issued_mandate(api, temporal, authorizedDIDs=[agent.creds.did])
    unknown_id = "urn:via:credential:5d7f0e59-1b8f-4c55-9a3e-0e3f1c2b4a6d"
    unknown = assert_error_shape(await present(stranger, unknown_id), 404)
    for alias in (False, True):
        body = assert_error_shape(await present(stranger, mandate["id"], alias=alias), 404)
        assert body == {**unknown, "message": unknown["message"].replace(unknown_id, mandate["id"])}
        assert "reason" not in body
    # what the stranger's own audit trail says is what an unknown mandate gets: nothing more
    denied = [r for r in chain(engine, stranger.creds.organization_id) if r.type == "VP_ISSUE_DENIED"]
    assert [(r.credential_id, r.request_id, r.data["reason"]) for r in denied] == [
        (unknown_id, None, "credential_not_found"),
        (mandate["id"], None, "credential_not_found"),
        (mandate["id"], None, "credential_not_found"),
    ]
    revoke_in_db(engine, mandate["id"])  # nor does its state show through
    assert assert_error_shape(await present(stranger, mandate["id"]), 404)["message"].endswith("not found")
    assert assert_error_shape(await present(agent, mandate["id"]), 400)["reason"] == "credential_revoked"


async def test_an_organization_the_mandate_lists_gets_a_vp_held_by_the_mandates_organization(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    agent = SignedClient(http, new_org(engine, cipher, settings))
    mandate = await issued_mandate(api, temporal, authorizedDIDs=[agent.creds.did])
    vp = (await presented(agent, mandate["id"]))["presentation"]
    assert vp["holder"] == api.creds.did  # the mandate's organization holds it, whoever asked
    assert vp["proof"]["verificationMethod"].startswith(api.creds.did + "#")
    with read_session(engine) as session:
        row = session.get(Presentation, vp["id"])
    assert row is not None and row.organization_id == agent.creds.organization_id


async def test_a_revoked_mandate_gets_no_vp(api: SignedClient, temporal: Any, engine: Engine) -> None:
    mandate = await issued_mandate(api, temporal)
    revoke_in_db(engine, mandate["id"])
    body = assert_error_shape(await present(api, mandate["id"]), 400)
    assert body["reason"] == "credential_revoked" and body["error"] == "Bad Request"
    assert "revoked" in body["message"]
    assert_error_shape(await present(api, mandate["id"], alias=True), 400)


async def test_unknown_malformed_and_document_ids(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    assert_error_shape(await present(api, "urn:via:credential:5d7f0e59-1b8f-4c55-9a3e-0e3f1c2b4a6d"), 404)
    for wrong in (
        "urn:via:action:5d7f0e59-1b8f-4c55-9a3e-0e3f1c2b4a6d",
        "0123456789abcdef01234567",
        "urn:via:credential:nope",
    ):
        assert_error_shape(await present(api, wrong), 400)
    document = await issued_mandate(api, temporal, credentials=[DOCUMENT])
    body = assert_error_shape(await present(api, document["id"]), 400)
    assert "not a mandate" in body["message"]
    other = SignedClient(http, new_org(engine, cipher, settings))
    assert_error_shape(await present(other, document["id"]), 404)  # never says it exists


async def test_signing_keys_are_cached_briefly_and_rotation_applies(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """Keys are kept for at most KEY_CACHE_SECONDS; what a just-retired key signed still verifies
    (it stays in the DID document)."""
    from store import keys

    assert presentations.KEY_CACHE_SECONDS <= 2
    mandate = await issued_mandate(api, temporal)
    before = (await presented(api, mandate["id"]))["receipt"]
    rotation = keys.rotate_service_key(engine, cipher, settings)
    resolver = did_resolver(engine, settings)
    verify_receipt(before, resolver, issuer_did=web_service_did(settings.public_url))
    presentations.forget_keys()
    after = (await presented(api, mandate["id"]))["receipt"]
    assert after["proof"]["verificationMethod"] == rotation.key.verification_method
    assert before["proof"]["verificationMethod"] != rotation.key.verification_method
    verify_receipt(after, resolver, issuer_did=web_service_did(settings.public_url))
