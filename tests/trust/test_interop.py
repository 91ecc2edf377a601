"""eddsa-jcs-2022 interoperability: an independent implementation verifies what we sign.

The independent side is Digital Bazaar's JavaScript stack (jsonld-signatures, data-integrity,
eddsa-jcs-2022-cryptosuite, vc), pinned in ``interop/package-lock.json`` and run by
``interop/verify.mjs`` with an offline document loader: it sees only the standard contexts shipped
in those npm packages and the documents a job passes in (our DID documents, our context). Besides
the proof, it requires the document to pass JSON-LD safe-mode RDF canonicalization (every term
defined), as an RDF-based verifier would.

Needs Node.js and npm on PATH (skipped with a message otherwise); ``npm ci`` runs once, when
``interop/node_modules`` is missing or older than the lock file.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.interop import Job, _assert_rejected, _assert_verified, _tampered, js_verify
from tests.support.vectors import load_vector
from trust.did import web_service_did, web_subject_did

EXAMPLES_CONTEXT_URL = "https://www.w3.org/ns/credentials/examples/v2"
# The W3C examples context (its published content), which no npm package ships.
EXAMPLES_CONTEXT = {"@context": {"@vocab": "https://www.w3.org/ns/credentials/examples#"}}
VP_CHALLENGE = "1f44d55f-f161-4938-a659-f8026467f126"
VP_DOMAIN = "issuer.example.com"


pytestmark = pytest.mark.usefixtures("interop_node")


def _vector(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = load_vector("eddsa-jcs-2022", name)
    return loaded


# --- the shared vectors: the harness itself agrees with the W3C and Digital Bazaar outputs ------


def _vector_credential_job(document: dict[str, Any]) -> Job:
    # The W3C vector's issuer (https://vc.example/issuers/5678) is not the did:key controller,
    # so the issuer-binding check (CredentialIssuancePurpose) is left out for it.
    return {
        "document": document,
        "kind": "credential",
        "purpose": "assertionMethod",
        "checkIssuer": False,
        "documents": {EXAMPLES_CONTEXT_URL: EXAMPLES_CONTEXT},
    }


def test_w3c_vector_credential_verifies_and_a_tampered_copy_does_not() -> None:
    signed = _vector("signedJCS.json")
    tampered = _tampered(signed, "credentialSubject", "alumniOf", value="The School of Forgery")
    good, bad = js_verify([_vector_credential_job(signed), _vector_credential_job(tampered)])
    _assert_verified(good)
    _assert_rejected(bad, "Invalid signature")


def test_offline_loader_refuses_unknown_urls() -> None:
    job = _vector_credential_job(_vector("signedJCS.json"))
    job["documents"] = {}  # the examples context is not served: it must not be fetched either
    _assert_rejected(js_verify(job), "refusing to fetch", EXAMPLES_CONTEXT_URL)


def _vp_job(vp: dict[str, Any], challenge: str = VP_CHALLENGE, domain: str = VP_DOMAIN) -> Job:
    return {
        "document": vp,
        "kind": "presentation",
        "purpose": "authentication",
        "challenge": challenge,
        "domain": domain,
        "documents": {EXAMPLES_CONTEXT_URL: EXAMPLES_CONTEXT},
    }


def test_js_signed_vp_verifies_only_with_its_challenge_and_domain() -> None:
    vp = _vector("interop/js-signed-vp.json")
    good, other_challenge, other_domain = js_verify(
        [
            _vp_job(vp),
            _vp_job(vp, challenge="00000000-0000-4000-8000-000000000000"),
            _vp_job(vp, domain="verifier.example.org"),
        ]
    )
    _assert_verified(good)
    _assert_rejected(other_challenge, "challenge is not as expected")
    _assert_rejected(other_domain, "domain is not as expected")


# --- our cryptosuite on minimal documents (no builders needed) -----------------------------------

SERVICE_DID = "did:web:mandatum.test"
ORG_DID = "did:web:mandatum.test:orgs:6650f0c1a2b3c4d5e6f70811"


def test_our_proofs_on_minimal_documents_verify_in_js() -> None:
    from datetime import UTC, datetime

    from trust.did import did_document, key_id
    from trust.eddsa_jcs import sign_document
    from trust.keys import Ed25519KeyPair

    old, current = Ed25519KeyPair.generate(), Ed25519KeyPair.generate()
    key = current.with_verification_method(key_id(SERVICE_DID, current.public_multikey))
    documents = {SERVICE_DID: did_document(SERVICE_DID, [old.public_multikey, current.public_multikey])}
    now = datetime.now(UTC)
    credential = sign_document(
        {
            "@context": ["https://www.w3.org/ns/credentials/v2"],
            "id": "urn:uuid:0c3b8a36-55c4-4d8e-9d0c-7f6a1c1d2e3f",
            "type": ["VerifiableCredential"],
            "issuer": SERVICE_DID,
            "validFrom": "2025-01-01T00:00:00Z",
            "credentialSubject": {"id": ORG_DID, "name": "Example Org"},
        },
        key,
        proof_purpose="assertionMethod",
        created=now,
    )
    bare = sign_document(
        {"id": "urn:via:receipt:1", "type": "MANDATE_REVOKED", "n": 1.5},
        key,
        proof_purpose="assertionMethod",
        created=now,
    )
    jobs = [
        {"document": credential, "kind": "credential", "documents": documents},
        {
            "document": _tampered(credential, "credentialSubject", "name", value="Other Org"),
            "kind": "credential",
            "documents": documents,
        },
        {"document": bare, "kind": "receipt", "documents": documents},
        {
            "document": _tampered(bare, "type", value="VERIFICATION_APPROVED"),
            "kind": "receipt",
            "documents": documents,
        },
        # signed for assertionMethod: not accepted as an authentication proof
        {
            "document": bare,
            "kind": "receipt",
            "purpose": "authentication",
            "challenge": "x",
            "documents": documents,
        },
    ]
    good_vc, bad_vc, good_bare, bad_bare, wrong_purpose = js_verify(jobs)
    _assert_verified(good_vc)
    _assert_rejected(bad_vc, "Invalid signature")
    _assert_verified(good_bare)
    _assert_rejected(bad_bare, "Invalid signature")
    _assert_rejected(wrong_purpose, "insufficient proofs matched")


# --- our credential (mandate form read as a standard VC), VP and receipt -------------------------

BASE_URL = "https://mandatum.test"
SUBJECT_DID = "did:web:mandatum.test:subjects:3f1d2c4b-5a69-4e7f-8a1b-2c3d4e5f6a7b"
CHALLENGE = "6f1c0f0e-2b7a-4c53-9a55-0d1c2b3a4f5e"
VERIFIER_DID = "did:web:verifier.example"


@pytest.fixture(scope="module")
def ours() -> dict[str, Any]:
    """Keys, DID documents, context and the signed mandate, VP and receipt, all made in Python."""
    from datetime import UTC, datetime, timedelta

    from trust.context import context_document, context_url
    from trust.credentials import action_pin, digest_sri, evidence_entry, mandate_credential, presentation
    from trust.did import did_document, key_id
    from trust.keys import Ed25519KeyPair
    from trust.receipts import VERIFICATION_APPROVED, receipt

    retired, service, org = (Ed25519KeyPair.generate() for _ in range(3))
    issuer_key = service.with_verification_method(key_id(SERVICE_DID, service.public_multikey))
    org_key = org.with_verification_method(key_id(ORG_DID, org.public_multikey))
    ctx_url = context_url(BASE_URL)
    now = datetime.now(UTC).replace(microsecond=0)
    version = {"id": "urn:via:action-version:9b2f", "rules": ["executionParams.amount <= userParams.max"]}
    mandate = mandate_credential(
        credential_id="urn:via:credential:0b7d3c52-8e0f-4c1e-b6a4-1a2b3c4d5e6f",
        issuer_key=issuer_key,
        context_url=ctx_url,
        organization_did=ORG_DID,
        grantors=[SUBJECT_DID],
        scope="payments",
        authorized_dids=[ORG_DID, VERIFIER_DID],
        valid_from=now - timedelta(minutes=1),
        valid_until=now + timedelta(days=30),
        created=now,
        action=action_pin(
            "urn:via:action:5e1f",
            "urn:via:action-version:9b2f",
            digest_sri(version),
            {"max": 250, "currencies": ["EUR", "USD"]},
        ),
        evidences=[evidence_entry("urn:via:evidence:1", b"consent record", f"{BASE_URL}/evidence/1")],
        # issue 36: in safe mode every term must be defined, signerQualities too
        signer_qualities=[{"id": SUBJECT_DID, "signerQuality": "CEO of Acme"}],
    )
    vp = presentation(
        mandate,
        org_key,
        holder_did=ORG_DID,
        presentation_id="urn:via:presentation:7c9e6679-7425-40de-944b-e07fc1f90ae7",
        challenge=CHALLENGE,
        domain=VERIFIER_DID,
        created=now,
        expires=now + timedelta(minutes=5),
    )
    signed_receipt = receipt(
        key=issuer_key,
        context_url=ctx_url,
        receipt_id="urn:via:receipt:1c6b1b0e-3d2f-4e8a-9f7b-6a5c4d3e2f10",
        type=VERIFICATION_APPROVED,
        timestamp=now,
        credential_id=mandate["id"],
        presentation_id=vp["id"],
        decision="allow",
        verifier=VERIFIER_DID,
        evaluations=[{"rule": "max", "expression": version["rules"][0], "result": "pass"}],
    )
    documents = {
        ctx_url: context_document(),
        SERVICE_DID: did_document(SERVICE_DID, [retired.public_multikey, service.public_multikey]),
        ORG_DID: did_document(ORG_DID, [org.public_multikey]),
    }
    return {
        "mandate": mandate,
        "vp": vp,
        "receipt": signed_receipt,
        "documents": documents,
        "issuer_key": issuer_key,
    }


def _credential_job(ours: dict[str, Any], mandate_form: dict[str, Any]) -> Job:
    from trust.credentials import to_standard

    return {
        "document": to_standard(mandate_form),
        "kind": "credential",
        "purpose": "assertionMethod",
        "documents": ours["documents"],
    }


def _our_vp_job(
    ours: dict[str, Any], vp: dict[str, Any], challenge: str = CHALLENGE, domain: str = VERIFIER_DID
) -> Job:
    return {
        "document": vp,
        "kind": "presentation",
        "purpose": "authentication",
        "challenge": challenge,
        "domain": domain,
        "documents": ours["documents"],
    }


def _receipt_job(ours: dict[str, Any], signed: dict[str, Any]) -> Job:
    return {
        "document": signed,
        "kind": "receipt",
        "purpose": "assertionMethod",
        "documents": ours["documents"],
    }


def test_our_mandate_credential_verifies_in_js_and_a_tampered_copy_does_not(ours: dict[str, Any]) -> None:
    mandate = ours["mandate"]
    params = ("credentialSubject", "mandate", "action", "userParams", "max")
    quality = dict(mandate["credentialSubject"]["signerQualities"][0], signerQuality="Janitor")
    good, bad_params, bad_scope, bad_quality = js_verify(
        [
            _credential_job(ours, mandate),
            _credential_job(ours, _tampered(mandate, *params, value=25000)),
            _credential_job(ours, _tampered(mandate, "credentialSubject", "mandate", "scope", value="all")),
            _credential_job(
                ours, _tampered(mandate, "credentialSubject", "signerQualities", value=[quality])
            ),
        ]
    )
    _assert_verified(good)
    _assert_rejected(bad_params, "Invalid signature")
    _assert_rejected(bad_scope, "Invalid signature")
    _assert_rejected(bad_quality, "Invalid signature")


def test_our_vp_verifies_in_js_and_a_tampered_copy_does_not(ours: dict[str, Any]) -> None:
    vp = ours["vp"]
    other = "00000000-0000-4000-8000-000000000000"
    embedded = ("verifiableCredential", "credentialSubject", "mandate", "action", "userParams", "max")
    good, bad_challenge, bad_embedded, other_challenge, other_domain = js_verify(
        [
            _our_vp_job(ours, vp),
            # the challenge member inside the document changed, and asked for as changed
            _our_vp_job(ours, _tampered(vp, "proof", "challenge", value=other), challenge=other),
            _our_vp_job(ours, _tampered(vp, *embedded, value=25000)),
            _our_vp_job(ours, vp, challenge=other),
            _our_vp_job(ours, vp, domain="did:web:elsewhere.example"),
        ]
    )
    _assert_verified(good)
    _assert_rejected(bad_challenge, "Invalid signature")
    _assert_rejected(bad_embedded, "Invalid signature")
    _assert_rejected(other_challenge, "challenge is not as expected")
    _assert_rejected(other_domain, "domain is not as expected")


def test_the_credential_inside_our_vp_verifies_in_js(ours: dict[str, Any]) -> None:
    from trust.credentials import presented_credential

    _assert_verified(js_verify(_credential_job(ours, presented_credential(ours["vp"]))))


def test_our_receipt_verifies_in_js_and_a_tampered_copy_does_not(ours: dict[str, Any]) -> None:
    signed = ours["receipt"]
    good, bad_decision, bad_verifier = js_verify(
        [
            _receipt_job(ours, signed),
            _receipt_job(ours, _tampered(signed, "decision", value="deny")),
            _receipt_job(ours, _tampered(signed, "verifier", value="did:web:elsewhere.example")),
        ]
    )
    _assert_verified(good)
    _assert_rejected(bad_decision, "Invalid signature")
    _assert_rejected(bad_verifier, "Invalid signature")


def test_our_document_form_verifies_in_js_as_it_is(ours: dict[str, Any]) -> None:
    from datetime import UTC, datetime, timedelta

    from trust.context import context_url
    from trust.credentials import add_document_action, document_credential

    key, now = ours["issuer_key"], datetime.now(UTC).replace(microsecond=0)
    document = document_credential(
        credential_id="urn:via:credential:2d0c9a3e-6b1f-4c7d-8e2a-3b4c5d6e7f80",
        issuer_key=key,
        context_url=context_url(BASE_URL),
        organization_did=ORG_DID,
        data=[{"label": "Contract", "type": "text", "value": "v1", "hidden": False, "fields": []}],
        valid_from=now - timedelta(minutes=1),
        valid_until=None,
        issuance_date=now,
    )
    document = add_document_action(document, key, "SIGN", now)  # a proof set of two
    tampered = _tampered(document, "credentialSubject", "data", 0, "value", value="v2")
    good, bad = js_verify(
        [{"document": d, "kind": "credential", "documents": ours["documents"]} for d in (document, tampered)]
    )
    _assert_verified(good)
    _assert_rejected(bad, "Invalid signature")


async def test_what_the_service_signs_verifies_in_js_with_the_documents_it_serves(
    http: Any, engine: Any, cipher: Any, settings: Any, org: Any
) -> None:
    """Keys from the store, DID documents and context fetched from the app's own routes; after an
    issuer key rotation the re-served document still verifies what the old key signed."""
    from datetime import UTC, datetime, timedelta

    from store.keys import organization_signing_key, rotate_service_key, service_signing_key
    from trust.context import CONTEXT_PATH, context_url
    from trust.credentials import mandate_credential, presentation, to_standard
    from trust.receipts import MANDATE_REVOKED, receipt

    issuer = service_signing_key(engine, cipher, settings)
    holder = organization_signing_key(engine, cipher, settings, org.organization_id)
    now = datetime.now(UTC).replace(microsecond=0)
    ctx = context_url(settings.public_url)
    mandate = mandate_credential(
        credential_id="urn:via:credential:5a0c1e2d-3b4f-4a6b-8c7d-9e0f1a2b3c4d",
        issuer_key=issuer,
        context_url=ctx,
        organization_did=org.did,
        grantors=[web_subject_did(settings.public_url, SUBJECT_DID[-36:])],
        scope="payments",
        authorized_dids=[org.did],
        valid_from=now,
        valid_until=None,
        created=now,
    )
    vp = presentation(
        mandate,
        holder,
        holder_did=org.did,
        presentation_id="urn:via:presentation:0e1d2c3b-4a59-4687-9a8b-7c6d5e4f3a2b",
        challenge=CHALLENGE,
        created=now,
        expires=now + timedelta(minutes=5),
    )
    revoked = receipt(
        key=issuer,
        context_url=ctx,
        type=MANDATE_REVOKED,
        timestamp=now,
        receipt_id="urn:via:receipt:9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a",
        credential_id=mandate["id"],
        reason="user_initiated",
    )

    async def served() -> dict[str, Any]:
        service_doc = (await http.get("/.well-known/did.json")).json()
        org_doc = (await http.get(f"/orgs/{org.organization_id}/did.json")).json()
        context = (await http.get(CONTEXT_PATH)).json()
        assert service_doc["id"] == web_service_did(settings.public_url) and org_doc["id"] == org.did
        return {web_service_did(settings.public_url): service_doc, org.did: org_doc, ctx: context}

    documents = await served()
    jobs: list[Job] = [
        {
            "document": to_standard(mandate),
            "kind": "credential",
            "purpose": "assertionMethod",
            "documents": documents,
        },
        {
            "document": vp,
            "kind": "presentation",
            "purpose": "authentication",
            "challenge": CHALLENGE,
            "documents": documents,
        },
        {"document": revoked, "kind": "receipt", "purpose": "assertionMethod", "documents": documents},
        {
            "document": _tampered(revoked, "reason", value="organization_policy"),
            "kind": "receipt",
            "purpose": "assertionMethod",
            "documents": documents,
        },
    ]
    credential, presented, signed, tampered = js_verify(jobs)
    _assert_verified(credential)
    _assert_verified(presented)
    _assert_verified(signed)
    _assert_rejected(tampered, "Invalid signature")

    rotate_service_key(engine, cipher, settings)
    after = await served()
    new_issuer = service_signing_key(engine, cipher, settings)
    assert new_issuer.public_multikey != issuer.public_multikey
    assert (
        len(after[web_service_did(settings.public_url)]["verificationMethod"]) >= 2
    )  # the retired key stays listed
    (old_receipt,) = js_verify(
        [{"document": revoked, "kind": "receipt", "purpose": "assertionMethod", "documents": after}]
    )
    _assert_verified(old_receipt)
