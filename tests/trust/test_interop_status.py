"""The served Bitstring Status List credential in the independent implementation.

Digital Bazaar's eddsa-jcs-2022 stack (``interop/verify.mjs``, see test_interop.py) verifies the
list credential as any credential of ours, with the DID documents and context the app serves, and
rejects a tampered copy; ``interop/status_bits.mjs`` reads its bits with Node's own GZIP and
base64url, from the specification. Skipped like test_interop.py when Node.js is missing.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from typing import Any

import pytest
from sqlalchemy import Engine
from sqlmodel import col, select

from store.db import read_session
from store.tables import Credential
from tests.support.api_client import SignedClient
from tests.support.interop import INTEROP, _assert_rejected, _assert_verified, js_verify
from tests.support.interop import interop_node as interop_node  # the fixture
from tests.support.mandates import issued_mandate
from trust import status_list as bsl
from trust.context import CONTEXT_PATH, context_url
from trust.did import web_service_did

pytestmark = pytest.mark.usefixtures("interop_node", "worker", "no_server_errors")


def node_bits(encoded_list: str, indices: list[int]) -> dict[str, Any]:
    node = shutil.which("node") or "node"
    done = subprocess.run(
        [node, str(INTEROP / "status_bits.mjs")],
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        input=json.dumps({"encodedList": encoded_list, "indices": indices}),
    )
    assert done.returncode == 0, f"status_bits.mjs failed ({done.returncode}):\n{done.stderr}"
    result: dict[str, Any] = json.loads(done.stdout)
    return result


async def documents_served(http: Any, settings: Any) -> dict[str, Any]:
    return {
        web_service_did(settings.public_url): (await http.get("/.well-known/did.json")).json(),
        context_url(settings.public_url): (await http.get(CONTEXT_PATH)).json(),
    }


async def served_list(http: Any, settings: Any, url: str) -> dict[str, Any]:
    resp = await http.get(url.removeprefix(settings.public_url))  # unsigned
    assert resp.status_code == 200, resp.text
    return dict(resp.json())


def list_job(listed: dict[str, Any], documents: dict[str, Any]) -> dict[str, Any]:
    return {"document": listed, "kind": "credential", "purpose": "assertionMethod", "documents": documents}


async def test_the_list_verifies_in_js_and_its_bits_follow_revocations(
    api: SignedClient,
    temporal: Any,
    http: Any,
    settings: Any,
    engine: Engine,
) -> None:
    revoked, kept = await issued_mandate(api, temporal), await issued_mandate(api, temporal)
    entries = [m["w3cCredential"]["credentialStatus"] for m in (revoked, kept)]
    url = entries[0]["statusListCredential"]
    assert entries[1]["statusListCredential"] == url  # one shared list until it is full
    indices = [int(e["statusListIndex"]) for e in entries]
    documents = await documents_served(http, settings)

    before = await served_list(http, settings, url)
    answer = await api.post(f"/credential/{revoked['id']}/revoke", {"reason": "user_initiated"})
    assert answer.status_code == 200, answer.text
    after = await served_list(http, settings, url)
    cleared = bsl.encode_list(bsl.bitstring([]))
    forged = {**after, "credentialSubject": {**after["credentialSubject"], "encodedList": cleared}}
    good_before, good_after, bad = js_verify(
        [list_job(before, documents), list_job(after, documents), list_job(forged, documents)]
    )
    _assert_verified(good_before)
    _assert_verified(good_after)
    _assert_rejected(bad, "Invalid signature")

    read_before = node_bits(before["credentialSubject"]["encodedList"], indices)
    read_after = node_bits(after["credentialSubject"]["encodedList"], indices)
    assert read_before["length"] == read_after["length"] == 131072
    assert read_before["bits"] == [0, 0] and read_after["bits"] == [1, 0]
    with read_session(engine) as session:
        list_id = url.rsplit("/", 1)[1]
        stored = {
            int(i)
            for i in session.exec(
                select(Credential.status_list_index).where(
                    Credential.status_list_id == list_id, col(Credential.revoked_at).is_not(None)
                )
            )
            if i is not None
        }
    assert set(read_after["set"]) == stored and set(read_before["set"]) == stored - {indices[0]}
