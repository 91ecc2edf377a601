"""Every deny reason of CONTRACT 5, and their order: the first failing check is the one reported."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import presentations
from store import keys
from store.db import read_session, utcnow
from store.tables import Presentation
from tests.conftest import new_org
from tests.support.api_client import SignedClient
from tests.support.audit import chain
from tests.support.presentations import GOOD, checked, new_vp, revoke_in_db, stored, verify
from trust import credentials as vc
from trust.did import key_id
from trust.eddsa_jcs import parse_datetime
from trust.keys import Ed25519KeyPair

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")

MANDATE_ID = "urn:via:credential:5d7f0e59-1b8f-4c55-9a3e-0e3f1c2b4a6d"


def resign(
    vp: dict[str, Any],
    key: Ed25519KeyPair,
    credential: dict[str, Any] | None = None,
    presentation_id: str | None = None,
    holder: str | None = None,
) -> dict[str, Any]:
    """The VP re-signed by ``key`` (same challenge and times unless told), as a forger would."""
    proof = vp["proof"]
    return vc.presentation(
        credential or vp["verifiableCredential"],
        key,
        holder_did=holder or vp["holder"],
        presentation_id=presentation_id or vp["id"],
        challenge=proof["challenge"],
        created=parse_datetime(proof["created"]),
        expires=parse_datetime(proof["expires"]),
        domain=proof.get("domain"),
    )


def org_key(engine: Engine, cipher: SecretCipher, settings: Settings, api: SignedClient) -> Ed25519KeyPair:
    return keys.organization_signing_key(engine, cipher, settings, api.creds.organization_id)


def edited(vp: dict[str, Any], *path: str, value: Any) -> dict[str, Any]:
    copied = copy.deepcopy(vp)
    node = copied
    for name in path[:-1]:
        node = node[name]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return copied


@pytest.mark.parametrize(
    ("path", "value"),
    [
        (("proof",), None),
        (("proof", "cryptosuite"), "ecdsa-rdfc-2019"),
        (("proof", "challenge"), "another-challenge-than-the-one-issued"),
        (("proof", "proofPurpose"), "assertionMethod"),
        (("type",), 5),
        (("verifiableCredential",), None),
    ],
)
async def test_vp_proof_invalid(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings, path: tuple[str, ...], value: Any
) -> None:
    mandate, vp = await new_vp(api, temporal)
    answer = await verify(api, edited(vp, *path, value=value), GOOD)
    body = checked(answer, engine, settings, "vp_proof_invalid")
    assert body["evaluations"] == []
    if path != ("verifiableCredential",):  # the receipt names what the VP claims
        assert body["credentialId"] == mandate["id"] and body["receipt"]["presentationId"] == vp["id"]
    assert "requestId" not in body["receipt"]  # the VP was not recognised as ours
    checked(await verify(api, vp, GOOD), engine, settings)  # the genuine VP was not used up


async def test_an_empty_object_is_denied_with_a_receipt(
    api: SignedClient,
    engine: Engine,
    settings: Settings,
) -> None:
    body = checked(await verify(api, {}), engine, settings, "vp_proof_invalid")
    assert body["credentialId"] == "" and "presentationId" not in body["receipt"]


@pytest.mark.parametrize(
    "path",
    [("verifiableCredential", "credentialSubject", "mandate", "scope"), ("proof", "expires"), ("holder",)],
)
async def test_vp_signature_invalid(
    api: SignedClient, temporal: Any, engine: Engine, settings: Settings, path: tuple[str, ...]
) -> None:
    _, vp = await new_vp(api, temporal)
    value = "2999-01-01T00:00:00Z" if path[-1] == "expires" else "everything"
    if path == ("holder",):  # a holder whose DID document lists the signing key: still a forgery
        value = vp["holder"]
        vp = edited(vp, "id", value="urn:via:presentation:5d7f0e59-1b8f-4c55-9a3e-0e3f1c2b4a6d")
    checked(await verify(api, edited(vp, *path, value=value), GOOD), engine, settings, "vp_signature_invalid")


async def test_vp_signer_unknown(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    _, vp = await new_vp(api, temporal)
    stray = Ed25519KeyPair.generate()
    unlisted = stray.with_verification_method(key_id(api.creds.did, stray.public_multikey))
    checked(await verify(api, resign(vp, unlisted), GOOD), engine, settings, "vp_signer_unknown")
    did_key = "did:key:" + stray.public_multikey
    foreign = resign(
        vp, stray.with_verification_method(key_id(did_key, stray.public_multikey)), holder=did_key
    )  # a valid signature, but the holder is not the subject
    checked(await verify(api, foreign, GOOD), engine, settings, "vp_signer_unknown")
    checked(await verify(api, vp, GOOD), engine, settings)


async def test_credential_signature_invalid(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    _, vp = await new_vp(api, temporal)
    stranger = SignedClient(http, new_org(engine, cipher, settings))
    widened = edited(
        vp["verifiableCredential"],
        "credentialSubject",
        "mandate",
        "context",
        "authorizedDIDs",
        value=[api.creds.did, stranger.creds.did],
    )
    forged = resign(vp, org_key(engine, cipher, settings, api), credential=widened)
    checked(await verify(stranger, forged, GOOD), engine, settings, "credential_signature_invalid")


async def test_credential_not_found(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """Genuine signatures on a VP this service never issued."""
    mandate, vp = await new_vp(api, temporal)
    unknown = resign(
        vp,
        org_key(engine, cipher, settings, api),
        presentation_id="urn:via:presentation:5d7f0e59-1b8f-4c55-9a3e-0e3f1c2b4a6d",
    )
    body = checked(await verify(api, unknown, GOOD), engine, settings, "credential_not_found")
    assert body["credentialId"] == mandate["id"] and "requestId" not in body["receipt"]
    _, other_vp = await new_vp(api, temporal)  # a VP of one mandate carrying another
    swapped = resign(other_vp, org_key(engine, cipher, settings, api), credential=vp["verifiableCredential"])
    checked(await verify(api, swapped, GOOD), engine, settings, "credential_not_found")


async def test_not_yet_valid_and_expired_mandates(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    def window(valid_from: datetime, valid_until: datetime | None) -> dict[str, Any]:
        cred = {
            "type": "POLICY",
            "name": "Rent payments",
            "scope": "payments",
            "validFrom": valid_from.isoformat(),
            "action": {"id": "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f", "userParams": {}},
        }
        return {**cred, "validUntil": valid_until.isoformat()} if valid_until else cred

    now = utcnow()
    _, early = await new_vp(api, temporal, credentials=[window(now + timedelta(days=1), None)])
    checked(await verify(api, early, GOOD), engine, settings, "not_yet_valid")
    past = window(now - timedelta(days=9), now - timedelta(days=2))
    _, late = await new_vp(api, temporal, credentials=[past])
    checked(await verify(api, late, GOOD), engine, settings, "expired")


async def test_an_expired_vp_is_expired_even_when_replayed(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    mandate, _ = await new_vp(api, temporal)
    old = presentations.issue_presentation(
        engine,
        cipher,
        settings,
        actor=Actor.api_key(api.creds.key_id),
        caller_org_id=api.creds.organization_id,
        mandate_id=mandate["id"],
        now=utcnow() - timedelta(minutes=6),
    ).presentation
    checked(await verify(api, old, GOOD), engine, settings, "expired")
    with read_session(engine) as session:
        row = session.get(Presentation, old["id"])
    assert row is not None and row.used_at is not None  # it got past the signature checks
    checked(await verify(api, old, GOOD), engine, settings, "expired")
    tampered = edited(old, "verifiableCredential", "credentialSubject", "mandate", "scope", value="all")
    checked(await verify(api, tampered, GOOD), engine, settings, "vp_signature_invalid")


async def test_credential_revoked(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    mandate, vp = await new_vp(api, temporal)
    revoke_in_db(engine, mandate["id"])
    checked(await verify(api, vp, GOOD), engine, settings, "credential_revoked")


async def test_verifier_access(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    bank, shop, stranger = (SignedClient(http, new_org(engine, cipher, settings)) for _ in range(3))
    dids = [bank.creds.did, shop.creds.did]
    _, vp = await new_vp(api, temporal, authorizedDIDs=dids)
    checked(await verify(stranger, vp, GOOD), engine, settings, "verifier_not_authorized")
    _, bound = await new_vp(api, temporal, target=bank.creds.did, authorizedDIDs=dids)
    body = checked(await verify(shop, bound, GOOD), engine, settings, "vp_domain_mismatch")
    assert body["receipt"]["verifier"] == shop.creds.did
    _, for_bank = await new_vp(api, temporal, target=bank.creds.did, authorizedDIDs=dids)
    body = checked(await verify(bank, for_bank, GOOD), engine, settings)
    assert body["receipt"]["verifier"] == bank.creds.did
    _, unbound = await new_vp(api, temporal, authorizedDIDs=dids)
    checked(await verify(shop, unbound, GOOD), engine, settings)  # any authorized verifier


def _used(engine: Engine, presentation_id: str) -> tuple[Any, Any]:
    with read_session(engine) as session:
        row = session.get(Presentation, presentation_id)
    assert row is not None
    return row.used_at, row.used_by


async def test_a_verifier_the_vp_may_not_be_shown_to_does_not_use_it_up(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    """A VP is spent only by a verifier it may be shown to: another organization's attempt (not
    in authorizedDIDs, or not the verifier a bound VP names) is denied, with its receipt, its
    stored verification and its audit record, and the holder's verifier can still use the VP."""
    bank, shop, stranger = (SignedClient(http, new_org(engine, cipher, settings)) for _ in range(3))
    dids = [bank.creds.did, shop.creds.did]
    _, vp = await new_vp(api, temporal, authorizedDIDs=dids)
    denied = checked(await verify(stranger, vp, GOOD), engine, settings, "verifier_not_authorized")
    assert denied["receipt"]["verifier"] == stranger.creds.did
    assert _used(engine, vp["id"]) == (None, None)
    assert stored(engine, denied["receipt"]["id"]).organization_id == stranger.creds.organization_id
    [record] = [r for r in chain(engine, stranger.creds.organization_id) if r.type == "VERIFY_DENY"]
    assert record.data["reason"] == "verifier_not_authorized" and record.data["receipt"] == denied["receipt"]
    checked(await verify(shop, vp, GOOD), engine, settings)  # still the holder's to use
    assert _used(engine, vp["id"])[1] == shop.creds.organization_id
    checked(await verify(stranger, vp, GOOD), engine, settings, "verifier_not_authorized")  # order kept
    checked(await verify(bank, vp, GOOD), engine, settings, "vp_already_used")

    _, bound = await new_vp(api, temporal, target=bank.creds.did, authorizedDIDs=dids)
    checked(await verify(shop, bound, GOOD), engine, settings, "vp_domain_mismatch")
    assert _used(engine, bound["id"]) == (None, None)
    checked(await verify(bank, bound, GOOD), engine, settings)
    assert _used(engine, bound["id"])[1] == bank.creds.organization_id


@pytest.mark.parametrize(
    ("execution", "words"),
    [
        ({"amount": 100}, "executionParams.payee is missing"),
        (None, "executionParams.amount is missing"),
        ({**GOOD, "currency": "EUR"}, "executionParams.currency is not declared"),
        ({"amount": "100", "payee": "Bob"}, "executionParams.amount"),
        ({"amount": 100, "payee": ["Bob"]}, "executionParams.payee"),
    ],
)
async def test_execution_params_invalid(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
    execution: dict[str, Any] | None,
    words: str,
) -> None:
    _, vp = await new_vp(api, temporal)
    body = checked(await verify(api, vp, execution), engine, settings, "execution_params_invalid")
    assert words in body["message"] and body["evaluations"] == []


async def test_the_first_failing_check_is_reported(
    api: SignedClient,
    http: Any,
    temporal: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    stranger = SignedClient(http, new_org(engine, cipher, settings))
    mandate, vp = await new_vp(api, temporal)
    old = presentations.issue_presentation(
        engine,
        cipher,
        settings,
        actor=Actor.api_key(api.creds.key_id),
        caller_org_id=api.creds.organization_id,
        mandate_id=mandate["id"],
        now=utcnow() - timedelta(minutes=6),
    ).presentation
    revoke_in_db(engine, mandate["id"])
    checked(await verify(stranger, old, {"bad": 1}), engine, settings, "expired")  # not revoked, not access
    checked(await verify(stranger, vp, {"bad": 1}), engine, settings, "credential_revoked")  # not access
    _, fresh = await new_vp(api, temporal, target=api.creds.did)
    checked(await verify(api, fresh, {"bad": 1}), engine, settings, "execution_params_invalid")
    checked(await verify(stranger, fresh, {"bad": 1}), engine, settings, "verifier_not_authorized")
    checked(await verify(api, fresh, {"bad": 1}), engine, settings, "vp_already_used")  # before params


async def test_revocation_through_the_api_stops_vps_issued_and_held(
    api: SignedClient,
    temporal: Any,
    engine: Engine,
    settings: Settings,
) -> None:
    """SPEC's revoked mandate: VP issuance then fails, a VP already held fails verification, both
    with reason credential_revoked."""
    mandate, held = await new_vp(api, temporal)
    path = quote(mandate["id"], safe="")
    revoked = await api.post(f"/credential/{path}/revoke", {"reason": "user_initiated"})
    assert revoked.status_code == 200, revoked.text
    refused = await api.post(f"/credential/{path}/presentation")
    assert refused.status_code == 400 and refused.json()["reason"] == "credential_revoked"
    checked(await verify(api, held, GOOD), engine, settings, "credential_revoked")
