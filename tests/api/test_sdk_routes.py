"""Routes the public SDK calls beside SPEC.md's (issue 16, items 2 and 3): an action's versions,
DID resolution, a credential's checked audit events, the routes not offered (a 404 naming them),
and query parameters a route does not take (a 400 naming them, never silently ignored)."""

from __future__ import annotations

import base64
import hashlib
from typing import Any
from urllib.parse import quote

import pytest
from sqlalchemy import Engine, update
from temporalio.client import Client

from api.routes.not_offered import NOT_OFFERED
from core.secretbox import SecretCipher
from core.settings import Settings
from store.tables import AuditRecord
from tests.conftest import new_org
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.audit import tamper
from tests.support.mandates import issued_mandate
from tests.support.presentations import presented, verify
from trust.did import web_organization_did


async def test_a_filter_the_list_does_not_know_is_refused_by_name(api: SignedClient) -> None:
    for query in ("subject=fred%40example.com", "entityType=request", "contact=x%40example.com&frobnicate=1"):
        body = assert_error_shape(await api.get(f"/request?{query}"), 400)
        unknown = query.split("=")[0] if "frobnicate" not in query else "frobnicate"
        assert f"'{unknown}'" in str(body["message"]) or unknown in str(body["message"]), body
        assert "pageIndex" in str(body["message"])  # says what the operation takes
    body = assert_error_shape(await api.get("/activity?entityId=abc"), 400)
    assert "entityId" in str(body["message"])
    ok = await api.get("/request?contact=x%40example.com&pageSize=5")
    assert ok.status_code == 200, ok.text
    assert ok.json() == {"data": [], "totalPages": 0}


async def test_an_actions_versions_are_listed_with_their_action(api: SignedClient) -> None:
    [action] = (await api.get("/actions")).json()["data"]
    got = await api.get(f"/actions/version/{quote(action['id'], safe='')}")
    assert got.status_code == 200, got.text
    body = got.json()
    assert body["totalPages"] == 1
    assert [v["id"] for v in body["data"]] == [v["id"] for v in action["versions"]]
    assert all(v["actionId"] == action["id"] for v in body["data"])
    assert {k: v for k, v in body["data"][0].items() if k != "actionId"} == action["versions"][0]
    assert_error_shape(await api.get("/actions/version/not-an-urn"), 400)
    missing = "urn:via:action:00000000-0000-4000-8000-000000000000"
    assert_error_shape(await api.get(f"/actions/version/{missing}"), 404)


async def test_dids_the_service_can_resolve_and_those_it_cannot(
    api: SignedClient, settings: Settings
) -> None:
    org_did = web_organization_did(settings.public_url, api.creds.organization_id)
    got = await api.get(f"/did/resolve/{quote(org_did, safe='')}")
    assert got.status_code == 200, got.text
    direct = await api.get(f"/orgs/{api.creds.organization_id}/did.json")
    assert got.json() == direct.json() and got.json()["id"] == org_did
    did_key = "did:key:z6MkiTBz1ymuepAQ4HEHYSF1H8quG5GLVVQR3djdX3mDooWp"  # W3C did:key test vector
    keyed = await api.get(f"/did/resolve/{did_key}")
    assert keyed.status_code == 200 and keyed.json()["id"] == did_key
    assert keyed.json()["verificationMethod"][0]["publicKeyMultibase"] == did_key.removeprefix("did:key:")
    elsewhere = assert_error_shape(await api.get("/did/resolve/did:web:example.com"), 404)
    assert "resolves its own did:web DIDs" in str(elsewhere["message"])
    for bad in ("not-a-did", "did:key:z6Mkxyz", "did:" + "a" * 600):
        assert_error_shape(await api.get(f"/did/resolve/{quote(bad, safe='')}"), 400)


async def test_a_credentials_events_are_checked_and_a_tampered_one_shows(
    api: SignedClient, temporal: Client, worker: None, engine: Engine
) -> None:
    mandate = await issued_mandate(api, temporal)
    vp = await presented(api, mandate["id"])
    allowed = await verify(api, vp["presentation"], {"amount": 10, "payee": "landlord"})
    assert allowed.status_code == 200, allowed.text
    path = f"/credential/{quote(mandate['id'], safe='')}/events"
    got = await api.get(path)
    assert got.status_code == 200, got.text
    body: dict[str, Any] = got.json()
    assert body["credentialId"] == mandate["id"] and body["ok"] is True and "reason" not in body
    types = [e["type"] for e in body["events"]]
    # the decision names the credential by its id, the rest by the mandate URN: both are found
    assert types == ["HUMAN_DECISION_ACCEPT", "MANDATE_ISSUED", "VP_ISSUED", "VERIFY_ACCEPT"], types
    assert body["eventCount"] == 4
    assert [e["seq"] for e in body["events"]] == sorted(e["seq"] for e in body["events"])
    assert all(e["contentValid"] and e["signatureValid"] and e["chainLinkValid"] for e in body["events"])

    vp_record = body["events"][2]["id"]
    tamper(
        engine,
        update(AuditRecord).where(AuditRecord.id == vp_record).values(actor="apiKey:someone-else"),
    )
    tampered = (await api.get(path)).json()
    assert tampered["ok"] is False and vp_record in tampered["reason"]
    edited = tampered["events"][2]
    assert (edited["contentValid"], edited["signatureValid"], edited["chainLinkValid"]) == (
        False,
        False,
        True,
    )
    assert all(e["contentValid"] for i, e in enumerate(tampered["events"]) if i != 2)
    assert_error_shape(await api.get("/credential/urn%3Avia%3Amandate%3Anope/events"), 400)
    assert_error_shape(await api.get("/credential/0123456789abcdef01234567/events"), 404)


@pytest.mark.parametrize(("method", "path", "instead"), NOT_OFFERED)
async def test_routes_not_offered_say_so(api: SignedClient, method: str, path: str, instead: str) -> None:
    concrete = path.replace("{evidenceId}", "0123456789abcdef01234567")
    resp = await (api.get(concrete) if method == "GET" else api.post(concrete, {}))
    body = assert_error_shape(resp, 404)
    assert f"{method} {path} is not offered by this service" in str(body["message"])


async def test_an_evidence_is_served_only_as_its_organizations_acceptance(
    api: SignedClient,
    temporal: Client,
    worker: None,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    mandate = await issued_mandate(api, temporal)
    [evidence] = mandate["w3cCredential"]["evidences"]
    got = await api.get(f"/credential/evidence/{quote(evidence['id'], safe='')}")
    assert got.status_code == 200 and got.headers["content-type"].startswith("text/plain")
    digest = "sha256-" + base64.b64encode(hashlib.sha256(got.content).digest()).decode()
    assert digest == evidence["digestSRI"]  # the bytes the signed credential commits to
    other = SignedClient(api.http, new_org(engine, cipher, settings))
    assert_error_shape(await other.get(f"/credential/evidence/{quote(evidence['id'], safe='')}"), 404)
    for bad in ("not-an-urn", "urn:via:decision:" + "x" * 60, "..\\etc\\passwd"):
        assert_error_shape(await api.get(f"/credential/evidence/{quote(bad, safe='')}"), 400)
    # a path that climbs out matches no route at all: nothing is read for it
    assert_error_shape(await api.get("/credential/evidence/..%2F..%2Fetc%2Fpasswd"), 404)
    missing = "urn:via:decision:00000000-0000-4000-8000-000000000000"
    assert_error_shape(await api.get(f"/credential/evidence/{missing}"), 404)


async def test_too_many_query_parameters_are_refused(api: SignedClient) -> None:
    flood = "&".join("securityLevel=CONTACT" for _ in range(51))
    body = assert_error_shape(await api.get(f"/request?{flood}"), 400)
    assert "At most 50 query parameters" in str(body["message"])


async def test_an_encoded_presentation_that_does_not_decode_is_denied_as_malformed(
    api: SignedClient,
) -> None:
    sent = await api.post(
        "/credential/verify", {"presentationEncoded": "%%% not base64"}, headers={"API-Version": "2026-09-01"}
    )
    assert sent.status_code in (400, 403), sent.text
    assert sent.json()["statusCode"] == sent.status_code and sent.json()["message"]


@pytest.mark.parametrize("depth", [33, 5_000, 200_000])
async def test_an_encoded_presentation_nested_too_deeply_is_refused(api: SignedClient, depth: int) -> None:
    """The body's nesting limit (api.limits) holds inside presentationEncoded too: the JSON it
    decodes to was never seen by the check on the body."""
    nested = base64.b64encode(("[" * depth + "]" * depth).encode()).decode()
    sent = await api.post(
        "/credential/verify", {"presentationEncoded": nested}, headers={"API-Version": "2026-09-01"}
    )
    body = assert_error_shape(sent, 400)
    assert body["message"] == "presentationEncoded: the presentation is nested more than 31 levels deep"
    # at the limit it is read, and refused for what it is: not a presentation
    within = base64.b64encode(("[" * 31 + "]" * 31).encode()).decode()
    sent = await api.post(
        "/credential/verify", {"presentationEncoded": within}, headers={"API-Version": "2026-09-01"}
    )
    assert assert_error_shape(sent, 400)["message"] == "presentation: input should be a valid dictionary"


async def test_a_body_a_change_unpacked_too_deeply_is_refused(
    api: SignedClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever a version change unpacks is held to the body's nesting limit again (api.versions)."""
    deep: Any = {}
    for _ in range(40):
        deep = {"a": deep}
    monkeypatch.setattr("api.versions.versioning.upgrade_request", lambda *_: {"presentation": deep})
    sent = await api.post("/credential/verify", {"presentation": {}}, headers={"API-Version": "2026-09-01"})
    # 2026-09-01's error message is one string (docs/sdk.md)
    assert assert_error_shape(sent, 400)["message"] == "body is nested more than 32 levels deep"


MALFORMED_IN_OLDER_VERSIONS: list[tuple[str, str, dict[str, Any]]] = [
    ("POST", "/request", {"securityLevel": ["CONTACT"]}),
    ("POST", "/request", {"securityLevel": {"name": "HUMANOS_KYC"}}),
    ("POST", "/request", {"users": "ana@example.com"}),
    ("POST", "/request", {"users": [1, None, ["x"]]}),
    ("POST", "/request", {"users": [{"contact": ["x"], "language": ["ENG"]}]}),
    ("POST", "/request", {"users": [{"language": {"x": 1}}]}),
    ("POST", "/request", {"users": None}),
    ("POST", "/request", {"contacts": {"contact": "ana@example.com"}}),
    ("POST", "/credential/verify", {"presentationEncoded": ["x"]}),
    ("POST", "/credential/verify", {"presentationEncoded": None}),
    ("POST", "/credential/verify", {"presentationEncoded": 12}),
]


@pytest.mark.parametrize("version", ["2026-05-20", "2026-09-01"])
async def test_what_older_versions_take_is_refused_when_malformed(api: SignedClient, version: str) -> None:
    """The older versions' request changes meet any JSON a caller sends: a value of the wrong type
    is passed on for the newest version's checks to refuse (a list as securityLevel was a 500:
    it was looked up in a dict)."""
    headers = {"API-Version": version}
    base = {k: v for k, v in policy_request().items() if k != "contacts"}
    for method, path, fields in MALFORMED_IN_OLDER_VERSIONS:
        body = {**base, **fields} if path == "/request" else fields
        sent = await api.request(method, path, body, headers=headers)
        assert sent.status_code == 400, (fields, sent.status_code, sent.text)
        assert sent.json()["message"], fields
    for path, params in (
        ("/request", {"securityLevel": "HUMANOS_KYC"}),
        ("/request", {"subject": ""}),
        ("/request", {"subject": "+"}),
        ("/request", {"subject": "did:"}),
        ("/activity", {"entityType": "request", "entityId": "x"}),
        ("/activity", {"entityType": "credential", "entityId": "urn:via:credential:zz"}),
        ("/activity", {"type": "NOPE"}),
        ("/activity", {"entityType": "x"}),
    ):
        got = await api.get(path, params=params, headers=headers)
        assert got.status_code in (200, 400), (path, params, got.status_code, got.text)
