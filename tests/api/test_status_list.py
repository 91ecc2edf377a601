"""The W3C Bitstring Status List credentials at GET /credentials/status/{listId} (public).

The served list is read twice: with trust.status_list (what our verifiers use) and with
``spec_bit``, a decoder written here from the specification alone: encodedList = "u" + base64url
(no padding) of the GZIP-compressed bitstring, index 0 = the most significant bit of byte 0.
"""

from __future__ import annotations

import base64
import gzip
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import col, select

from store.db import read_session
from store.keys import did_resolver
from store.tables import Credential
from tests.support.api_client import SignedClient, assert_error_shape
from tests.support.mandates import issued_mandate
from trust import status_list as bsl
from trust.context import context_url, contexts
from trust.credentials import to_standard
from trust.did import Resolver, did_document, key_id, web_service_did
from trust.keys import Ed25519KeyPair

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]

DOCUMENT = {
    "type": "DOCUMENT",
    "name": "Lease",
    "data": [{"label": "Address", "type": "text", "value": "Rua 1", "hidden": False}],
}


def spec_bits(encoded: str) -> bytes:
    assert encoded[0] == "u" and "=" not in encoded
    return gzip.decompress(base64.urlsafe_b64decode(encoded[1:] + "=" * (-len(encoded[1:]) % 4)))


def spec_bit(encoded: str, index: int) -> int:
    raw = spec_bits(encoded)
    return (raw[index // 8] >> (7 - index % 8)) & 1


def entry(mandate: dict[str, Any]) -> tuple[str, int]:
    status = mandate["w3cCredential"]["credentialStatus"]
    return status["statusListCredential"], int(status["statusListIndex"])


async def fetch(http: Any, settings: Any, url: str, **headers: str) -> Any:
    """Unsigned, as any verifier fetches it."""
    assert url.startswith(settings.public_url)
    return await http.get(url.removeprefix(settings.public_url), headers=headers)


def revoked_indices(engine: Engine, list_id: str) -> set[int]:
    with read_session(engine) as session:
        rows = session.exec(
            select(Credential.status_list_index).where(
                Credential.status_list_id == list_id, col(Credential.revoked_at).is_not(None)
            )
        )
        return {int(i) for i in rows if i is not None}


async def test_a_revocation_flips_exactly_that_mandates_bit(
    api: SignedClient,
    temporal: Any,
    http: Any,
    settings: Any,
    engine: Engine,
) -> None:
    mandate = await issued_mandate(api, temporal)
    document = await issued_mandate(api, temporal, credentials=[DOCUMENT])
    (url, index), (other_url, other_index) = entry(mandate), entry(document)
    resolver = did_resolver(engine, settings)

    before = await fetch(http, settings, url)
    assert before.status_code == 200, before.text
    assert before.headers["content-type"] == "application/vc"
    assert before.headers["cache-control"] == "public, max-age=30"
    assert before.headers["etag"].startswith('W/"')
    listed = before.json()
    assert listed["@context"] == contexts(context_url(settings.public_url))
    assert listed["id"] == url and listed["type"] == ["VerifiableCredential", "BitstringStatusListCredential"]
    assert listed["issuer"] == web_service_did(settings.public_url) == mandate["w3cCredential"]["issuer"]
    assert datetime.fromisoformat(listed["validFrom"].replace("Z", "+00:00")) <= datetime.now(UTC)
    subject = listed["credentialSubject"]
    assert subject == {
        "id": f"{url}#list",
        "type": "BitstringStatusList",
        "statusPurpose": "revocation",
        "encodedList": subject["encodedList"],
        "ttl": 30000,
    }
    proof = listed["proof"]
    assert (proof["type"], proof["cryptosuite"], proof["proofPurpose"]) == (
        "DataIntegrityProof",
        "eddsa-jcs-2022",
        "assertionMethod",
    )
    assert proof["verificationMethod"].startswith(web_service_did(settings.public_url) + "#")
    assert len(spec_bits(subject["encodedList"])) * 8 == 131072
    assert spec_bit(subject["encodedList"], index) == 0
    assert bsl.credential_status(to_standard(mandate["w3cCredential"]), listed, resolver) is False

    revoke = await api.post(f"/credential/{mandate['id']}/revoke", {"reason": "user_initiated"})
    assert revoke.status_code == 200, revoke.text
    after = await fetch(http, settings, url)
    assert after.status_code == 200 and after.headers["etag"] != before.headers["etag"]
    listed = after.json()
    encoded = listed["credentialSubject"]["encodedList"]
    assert spec_bit(encoded, index) == 1
    assert bsl.bit_at(bsl.verify_list_credential(listed, resolver), index) is True
    assert bsl.credential_status(to_standard(mandate["w3cCredential"]), listed, resolver) is True
    assert datetime.fromisoformat(listed["validFrom"].replace("Z", "+00:00")) == datetime.fromisoformat(
        revoke.json()["revokedAt"].replace("Z", "+00:00")
    ).replace(microsecond=0)

    # the other mandate (its own list or the same one) is untouched
    other = listed if other_url == url else (await fetch(http, settings, other_url)).json()
    assert spec_bit(other["credentialSubject"]["encodedList"], other_index) == 0
    assert bsl.credential_status(document["w3cCredential"], other, resolver) is False
    # every set bit is a revoked entry of this list, and every revoked entry is set
    raw = spec_bits(encoded)
    set_bits = {i for i in range(len(raw) * 8) if raw[i // 8] & (0x80 >> (i % 8))}
    assert set_bits == revoked_indices(engine, url.rsplit("/", 1)[1]) and index in set_bits


async def test_the_list_is_regenerated_only_when_its_revocations_change(
    api: SignedClient,
    temporal: Any,
    http: Any,
    settings: Any,
) -> None:
    mandate = await issued_mandate(api, temporal)
    url, _ = entry(mandate)
    first, second = await fetch(http, settings, url), await fetch(http, settings, url)
    assert first.json() == second.json()  # the same signed document: served from the cache
    cached = await fetch(http, settings, url, **{"If-None-Match": first.headers["etag"]})
    assert cached.status_code == 304 and not cached.content
    assert (await api.post(f"/credential/{mandate['id']}/revoke", {"reason": "x"})).status_code == 200
    third = await fetch(http, settings, url, **{"If-None-Match": first.headers["etag"]})
    assert third.status_code == 200 and third.json()["proof"] != first.json()["proof"]


@pytest.mark.parametrize(
    "list_id",
    ["00000000-0000-4000-8000-000000000000", "nope", "0" * 24, "00000000-0000-4000-8000-00000000000A"],
)
async def test_an_unknown_list_is_404(http: Any, list_id: str) -> None:
    body = assert_error_shape(await http.get(f"/credentials/status/{list_id}"), 404)
    assert "not found" in body["message"]


async def test_a_tampered_list_does_not_verify(
    api: SignedClient,
    temporal: Any,
    http: Any,
    settings: Any,
    engine: Engine,
) -> None:
    mandate = await issued_mandate(api, temporal)
    url, index = entry(mandate)
    listed = (await fetch(http, settings, url)).json()
    # the list as it would read with this active mandate revoked (clearing every bit instead forges
    # nothing when no mandate of the list was revoked yet: the test would depend on test order)
    revoked = bsl.encode_list(bsl.bitstring([index]))
    assert revoked != listed["credentialSubject"]["encodedList"]
    forged = {**listed, "credentialSubject": {**listed["credentialSubject"], "encodedList": revoked}}
    resolver = did_resolver(engine, settings)
    with pytest.raises(bsl.ListNotVerified, match="signature_invalid"):
        bsl.credential_status(to_standard(mandate["w3cCredential"]), forged, resolver)
    elsewhere = {**listed, "id": url + "x"}
    with pytest.raises(bsl.ListNotVerified, match="not the one the entry names"):
        bsl.credential_status(to_standard(mandate["w3cCredential"]), elsewhere, resolver)


# --- trust.status_list on its own ---------------------------------------------------------------


def test_bit_order_follows_the_specification() -> None:
    bits = bsl.bitstring([0, 9, 131071])
    assert len(bits) == 16384 and bits[0] == 0x80 and bits[1] == 0x40 and bits[-1] == 0x01
    encoded = bsl.encode_list(bits)
    assert encoded.startswith("u") and "=" not in encoded and encoded == bsl.encode_list(bits)
    assert spec_bits(encoded) == bits == bsl.decode_list(encoded)
    assert [i for i in (0, 1, 8, 9, 131070, 131071) if bsl.bit_at(bits, i)] == [0, 9, 131071]
    with pytest.raises(bsl.OutOfRange):
        bsl.bit_at(bits, 131072)
    with pytest.raises(bsl.OutOfRange):
        bsl.bitstring([131072])
    with pytest.raises(ValueError):
        bsl.bitstring([], length=8)


@pytest.mark.parametrize(
    "bad",
    [
        None,
        5,
        "",
        "H4sIAAAA",
        "u" + base64.b64encode(b"x" * 9).decode() + "==",
        "u!!!!",
        "u" + base64.urlsafe_b64encode(b"not gzip").decode().rstrip("="),
        "u" + base64.urlsafe_b64encode(gzip.compress(b"\0" * 64, mtime=0) + b"junk").decode().rstrip("="),
    ],
)
def test_malformed_encoded_lists_are_refused(bad: Any) -> None:
    with pytest.raises(bsl.MalformedValue):
        bsl.decode_list(bad)


def test_a_list_that_inflates_beyond_the_limit_is_refused() -> None:
    inflated = gzip.compress(bytes(bsl.MAX_DECODED_BYTES + 1))
    bomb = "u" + base64.urlsafe_b64encode(inflated).decode().rstrip("=")
    with pytest.raises(bsl.MalformedValue, match="inflates beyond"):
        bsl.decode_list(bomb)


def _signed_list(encoded: str, valid_from: datetime) -> tuple[dict[str, Any], Resolver]:
    did = "did:web:issuer.example"
    pair = Ed25519KeyPair.generate()
    key = pair.with_verification_method(key_id(did, pair.public_multikey))
    now = datetime.now(UTC)
    listed = bsl.list_credential(
        list_url="https://issuer.example/status/1",
        issuer_key=key,
        context_url="https://issuer.example",
        encoded_list=encoded,
        valid_from=valid_from,
        created=min(now, valid_from),
    )
    documents = {did: did_document(did, [pair.public_multikey])}
    return listed, Resolver(documents.get)


def test_a_short_list_and_a_future_list_are_refused() -> None:
    now = datetime.now(UTC)
    short, resolver = _signed_list(bsl.encode_list(bytes(1024)), now)
    with pytest.raises(bsl.ListTooShort):
        bsl.verify_list_credential(short, resolver)
    future, resolver = _signed_list(bsl.encode_list(bsl.bitstring([])), now + timedelta(hours=1))
    with pytest.raises(bsl.ListNotVerified, match="not yet valid"):
        bsl.verify_list_credential(future, resolver, now=now)
    assert bsl.verify_list_credential(future, resolver, now=now + timedelta(hours=2)) == bytes(16384)
