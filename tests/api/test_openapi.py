"""The OpenAPI document (``api.openapi``): valid OpenAPI 3.1 (openapi-spec-validator), every
operation with its signature, headers and only the statuses it can send, an example of each success
valid against its own schema, and path patterns that say exactly what the service takes."""

from __future__ import annotations

from typing import Any, get_args
from urllib.parse import quote

import pytest
from fastapi import FastAPI
from openapi_spec_validator import validate

from api.auth import PUBLIC_PREFIXES
from services.verification import MESSAGES
from store.actions import is_action_urn, is_version_urn
from tests.support.api_client import SignedClient, policy_request
from tests.support.openapi import Oracle
from trust.context import RECEIPT_TYPES
from wire import versioning
from wire.signed import Receipt

OBJECT_ID = "0123456789abcdef01234567"
UUID = "5b3f1f0e-8d5c-4c4e-9a3e-2b1f0c9d8e7a"
JSON = "application/json"


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (path, method, op) for path, methods in document["paths"].items() for method, op in methods.items()
    ]


def test_the_document_is_valid_openapi_3_1(app: FastAPI) -> None:
    document = app.openapi()
    assert document["openapi"].startswith("3.1.")
    validate(document)  # raises on the first problem
    assert versioning.newest() in document["info"]["description"]
    assert "docs/sdk.md" in document["info"]["description"]
    assert not [p for p in document["paths"] if p.startswith(("/r/", "/dev/", "/dashboard"))]


def test_every_operation_says_how_it_is_signed_and_which_headers_it_takes(app: FastAPI) -> None:
    document = app.openapi()
    schemes = document["components"]["securitySchemes"]
    assert schemes["ApiKey"] == {**schemes["ApiKey"], "type": "http", "scheme": "bearer"}
    assert {(s["in"], s["name"]) for k, s in schemes.items() if k != "ApiKey"} == {
        ("header", "X-Timestamp"),
        ("header", "X-Signature"),
    }
    for path, method, op in operations(document):
        signed = not path.startswith(PUBLIC_PREFIXES)
        headers = {p["name"] for p in op["parameters"] if p["in"] == "header"}
        assert op["security"] == ([{"ApiKey": [], "Timestamp": [], "Signature": []}] if signed else []), path
        assert ("API-Version" in headers) is signed and "X-Request-Id" in headers, (method, path)
        assert ("If-None-Match" in headers) is ("304" in op["responses"]), (method, path)
        for status, response in op["responses"].items():
            answer_headers = response["headers"]
            assert answer_headers["X-Request-Id"]["required"] is True
            has_version = "API-Version" in answer_headers
            assert has_version is (signed and status not in ("401", "413")), (method, path, status)
            if has_version:
                assert answer_headers["API-Version"]["required"] is (status != "400")
            if status in ("429", "503"):
                assert "Retry-After" in answer_headers, (method, path, status)


def test_only_the_statuses_an_operation_can_send(app: FastAPI) -> None:
    document = app.openapi()
    found = {op["operationId"]: sorted(op["responses"]) for _, _, op in operations(document)}
    assert found == {
        # 503: a request with placements while every PDF renderer is busy
        "create_request": ["201", "400", "401", "409", "413", "429", "503"],
        "list_requests": ["200", "400", "401"],
        "get_request": ["200", "400", "401", "404"],
        "cancel_request": ["200", "400", "401", "404", "409", "503"],
        "resend_code": ["200", "400", "401", "404", "409", "422", "429", "503"],
        "approval_link": ["200", "400", "401", "404"],
        "list_actions": ["200", "400", "401"],
        "get_action": ["200", "400", "401", "404"],
        "list_action_versions": ["200", "400", "401", "404"],
        "list_approvals": ["200", "400", "401"],
        "list_workflows": ["200", "400", "401"],
        "approval_document": ["200", "400", "401", "404"],
        "create_presentation": ["200", "400", "401", "403", "404", "409", "413"],
        "create_presentation_alias": ["200", "400", "401", "403", "404", "409", "413"],
        "verify_presentation": ["200", "400", "401", "403", "413", "429", "503"],
        "revoke_mandate": ["200", "400", "401", "404", "409", "413"],
        "revoke_mandate_alias": ["200", "400", "401", "404", "409", "413"],
        "credential_evidence": ["200", "400", "401", "404"],
        "credential_events": ["200", "400", "401", "404"],
        "get_credential": ["200", "400", "401", "404", "503"],
        "status_list_credential": ["200", "304", "404"],
        "service_did_document": ["200", "304"],
        "organization_did_document": ["200", "304", "404"],
        "subject_did_document": ["200", "304", "404"],
        "resolve_did": ["200", "304", "400", "401", "404"],
        "json_ld_context": ["200", "304"],
        "me": ["200", "400", "401"],
        "list_activity": ["200", "400", "401"],
        "report_identity": ["200", "400", "401", "404", "413", "503"],
        "revoke_trusted_sessions": ["200", "400", "401", "404"],
        "create_users": ["201", "400", "401", "409", "413", "429"],
        "get_user": ["200", "400", "401", "404"],
    }
    for _, _, op in operations(document):
        # a body can be too large only where there is one; the one 422 is resend's undelivered code
        assert ("413" in op["responses"]) is ("requestBody" in op), op["operationId"]
    schemas = document["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "ValidationError" not in schemas
    assert document["components"]["responses"]["MethodNotAllowed"]["headers"]["Allow"]["required"]


def test_every_operation_has_examples_valid_against_their_schemas(app: FastAPI) -> None:
    document = app.openapi()
    oracle = Oracle(document)
    for path, method, op in operations(document):
        at = ("paths", path, method)
        successes = [s for s in op["responses"] if s.startswith("2")]
        for status, response in op["responses"].items():
            for media, content in response.get("content", {}).items():
                if status in successes:
                    assert "example" in content, (method, path, status)
                if "example" in content:
                    problems = oracle.problems(
                        content["example"], *at, "responses", status, "content", media, "schema"
                    )
                    assert not problems, (method, path, status, problems)
        body = op.get("requestBody", {}).get("content", {}).get(JSON)
        if body is not None and op["requestBody"].get("required"):
            assert "example" in body, (method, path)
        if body is not None and "example" in body:
            assert not oracle.problems(body["example"], *at, "requestBody", "content", JSON, "schema")
        for i, parameter in enumerate(op["parameters"]):
            if parameter["in"] == "path":
                assert "example" in parameter, (method, path, parameter["name"])
            if "example" in parameter:
                problems = oracle.problems(parameter["example"], *at, "parameters", str(i), "schema")
                assert not problems, (method, path, parameter["name"], problems)


def test_signed_documents_have_typed_schemas(app: FastAPI) -> None:
    schemas = app.openapi()["components"]["schemas"]
    for name in ("MandateCredential", "DocumentCredential", "VerifiablePresentation", "Receipt"):
        assert schemas[name]["additionalProperties"] is False
        assert {"@context", "id", "type"} <= set(schemas[name]["required"])
    assert set(schemas["MandateCredential"]["required"]) >= {
        "issuer",
        "validFrom",
        "credentialSubject",
        "proofs",
    }
    assert "validUntil" not in schemas["MandateCredential"]["required"]
    assert set(schemas["VerifiablePresentation"]["required"]) >= {"holder", "verifiableCredential", "proof"}
    receipt = schemas["Receipt"]
    assert set(receipt["required"]) == {"@context", "id", "type", "timestamp", "credentialId", "proof"}
    assert tuple(receipt["properties"]["type"]["enum"]) == RECEIPT_TYPES
    assert get_args(Receipt.model_fields["type"].annotation) == RECEIPT_TYPES
    deny = schemas["VerifyDenied"]["properties"]["reason"]["enum"]
    assert deny == list(MESSAGES)
    presentation = schemas["PresentationData"]["properties"]["presentation"]
    assert presentation["allOf"] == [{"$ref": "#/components/schemas/VerifiablePresentation"}]


# --- what each path parameter takes: matching values get past its check, others are a 400 -------

ENCODED = f"urn%3Avia%3Acredential%3A{UUID}"  # a client that encoded the URN twice
PARAMETERS: list[tuple[str, str, str, list[str], list[str]]] = [
    (
        "GET",
        "/request/{requestId}",
        "requestId",
        [OBJECT_ID],
        [OBJECT_ID.upper(), OBJECT_ID[:-1], f"urn:via:credential:{UUID}"],
    ),
    (
        "DELETE",
        "/request/{requestId}",
        "requestId",
        [OBJECT_ID],
        ["not-an-id"],
    ),
    (
        "GET",
        "/credential/{credentialId}",
        "credentialId",
        [OBJECT_ID, f"urn:via:credential:{UUID}", f"urn:via:credential:{UUID.upper()}", ENCODED],
        [OBJECT_ID.upper(), f"urn:via:mandate:{UUID}", "urn:via:credential:nope", f"urn%253Avia{UUID}"],
    ),
    (
        "POST",
        "/credential/{mandateId}/presentation",
        "mandateId",
        [f"urn:via:credential:{UUID}", ENCODED, ENCODED.lower()],
        [OBJECT_ID, f"urn:via:credential:{UUID.upper()}", f"urn%2Fvia%2Fcredential%2F{UUID}"],
    ),
    (
        "POST",
        "/credential/{mandateId}/revoke",
        "mandateId",
        [OBJECT_ID, ENCODED],
        ["urn:via:credential:", OBJECT_ID + "0"],
    ),
    (
        "GET",
        "/credential/evidence/{evidenceId}",
        "evidenceId",
        [f"urn:via:decision:{UUID}", f"urn%3Avia%3Adecision%3A{UUID}"],
        ["urn:via:decision:abc", f"urn:via:decision:{UUID.upper()}", OBJECT_ID],
    ),
    (
        "GET",
        "/actions/{actionId}",
        "actionId",
        [f"urn:via:action:{UUID}"],
        [UUID, f"urn:via:action:{UUID.upper()}", f"urn%3Avia%3Aaction%3A{UUID}"],
    ),
    (
        "GET",
        "/did/resolve/{did}",
        "did",
        ["did:web:example.com", "did:example:a%3Ab"],
        ["not-a-did", "did:Web:example.com", "did:web:" + "a" * 500],
    ),
]


@pytest.mark.parametrize(("method", "template", "name", "accepted", "refused"), PARAMETERS)
@pytest.mark.usefixtures("worker")
async def test_a_path_pattern_is_exactly_what_the_operation_takes(
    api: SignedClient, method: str, template: str, name: str, accepted: list[str], refused: list[str]
) -> None:
    document = (await api.http.get("/openapi.json")).json()
    oracle = Oracle(document)
    [index] = [i for i, p in enumerate(oracle.operation(method, template)["parameters"]) if p["name"] == name]
    at = ("paths", template, method.lower(), "parameters", str(index), "schema")
    body = {"reason": "a test"} if template.endswith("/revoke") else None
    for value in accepted + refused:
        matches = not oracle.problems(value, *at)
        response = await api.request(method, template.replace("{" + name + "}", quote(value, safe="")), body)
        assert matches is (value in accepted), (value, matches)
        # nothing has these ids: a value the pattern takes is looked for (404), another is refused
        assert response.status_code == (404 if matches else 400), (value, response.status_code, response.text)


@pytest.mark.usefixtures("worker")
async def test_an_id_followed_by_a_line_break_is_no_id(api: SignedClient) -> None:
    """The checks take the whole value, as the patterns do in JSON Schema (``re.match`` with ``$``
    let a trailing line break through)."""
    action = f"urn:via:action:{UUID}\n"
    assert not is_action_urn(action) and not is_version_urn(f"urn:via:action-version:{UUID}\n")
    got = await api.get(f"/actions/{quote(action, safe='')}")
    assert got.status_code == 400 and "action URN" in got.json()["message"], got.text
    body = policy_request()
    body["credentials"][0]["action"]["id"] = body["credentials"][0]["action"]["id"] + "\n"
    created = await api.post("/request", body)
    assert created.status_code == 400, created.text
    assert created.json()["message"] == [
        "credentials.0.action.id: must be an action URN urn:via:action:<uuid>"
    ]
