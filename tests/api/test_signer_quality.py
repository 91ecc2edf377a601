"""A subject's ``signerQuality`` (issue 36) where it ends up: on their approval page (escaped), signed
into the issued credential (``credentialSubject.signerQualities``, in both forms, the signatures
still verifying and broken by a changed quality) and beside their decision in the PDF."""

from __future__ import annotations

import copy
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine
from temporalio.client import Client

from core.settings import Settings
from store.keys import did_resolver
from tests.support.api_client import SignedClient
from tests.support.documents import LEASE, pdf_text
from tests.support.journey_messages import journey_secrets
from tests.support.mandates import accept_all, create_request
from trust.credentials import verify_document_credential, verify_mandate
from trust.eddsa_jcs import ProofError

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")

QUALITY = 'CEO of <b>Acme</b> & "Sons"'


def subject_uuid(subject: dict[str, Any]) -> str:
    return str(subject["id"]).rsplit(":", 1)[1]


async def test_the_page_shows_the_quality_escaped(api: SignedClient) -> None:
    request = await create_request(
        api, contacts=[{"contact": "ana@example.com", "signerQuality": QUALITY}, "bob@example.com"]
    )
    ana, bob = request["subjects"]
    secrets = journey_secrets()
    page = await api.http.get(f"/r/{secrets.link_token(request['id'], subject_uuid(ana))}")
    assert page.status_code == 200, page.text
    assert "You sign as: CEO of &lt;b&gt;Acme&lt;/b&gt; &amp; &#34;Sons&#34;" in page.text
    assert "<b>Acme" not in page.text
    french = await api.http.get(f"/r/{secrets.link_token(request['id'], subject_uuid(ana))}?lang=FRA")
    assert "Vous signez en qualité de : CEO of &lt;b&gt;" in french.text
    other = await api.http.get(f"/r/{secrets.link_token(request['id'], subject_uuid(bob))}")
    assert other.status_code == 200 and 'id="signer-quality"' not in other.text


async def test_the_quality_is_signed_into_the_mandate(
    api: SignedClient, temporal: Client, engine: Engine, settings: Settings
) -> None:
    request = await create_request(
        api, contacts=[{"contact": "ana@example.com", "signerQuality": QUALITY}, "bob@example.com"]
    )
    ana, _ = request["subjects"]
    [cred] = await accept_all(api, temporal, request)
    assert cred["status"] == "ACTIVE"
    mandate = cred["w3cCredential"]
    assert mandate["credentialSubject"]["signerQualities"] == [{"id": ana["id"], "signerQuality": QUALITY}]
    assert ana["id"] in mandate["credentialSubject"]["mandate"]["grantor"]
    resolver = did_resolver(engine, settings)
    verify_mandate(mandate, resolver)
    changed = copy.deepcopy(mandate)
    changed["credentialSubject"]["signerQualities"][0]["signerQuality"] = "Janitor"
    with pytest.raises(ProofError):
        verify_mandate(changed, resolver)
    # the document form carries it too, signed
    got = await api.get(f"/credential/{quote(cred['id'], safe='')}")
    document = got.json()["w3cCredential"]
    assert document["credentialSubject"]["signerQualities"] == [{"id": ana["id"], "signerQuality": QUALITY}]
    verify_document_credential(document, resolver)


async def test_without_a_quality_the_credential_is_as_before(
    api: SignedClient, temporal: Client, engine: Engine, settings: Settings
) -> None:
    request = await create_request(api, contacts=["solo@example.com"])
    [cred] = await accept_all(api, temporal, request)
    assert "signerQualities" not in cred["w3cCredential"]["credentialSubject"]
    verify_mandate(cred["w3cCredential"], did_resolver(engine, settings))


async def test_the_pdf_shows_the_quality_beside_the_signer(
    api: SignedClient, temporal: Client, engine: Engine, settings: Settings
) -> None:
    request = await create_request(
        api,
        contacts=[{"contact": "ana@example.com", "signerQuality": "Legal guardian"}, "bob@example.com"],
        credentials=[LEASE],
    )
    [cred] = await accept_all(api, temporal, request)
    got = await api.get(f"/credential/{quote(cred['id'], safe='')}", params={"includePdf": "true"})
    assert got.status_code == 200, got.text
    document = got.json()["w3cCredential"]
    assert document["credentialSubject"]["signerQualities"][0]["signerQuality"] == "Legal guardian"
    verify_document_credential(document, did_resolver(engine, settings))
    text = " ".join(pdf_text(got.json()["pdf"]).split())
    assert "ana@example.com (as Legal guardian): accepted" in text
    assert "bob@example.com: accepted" in text
