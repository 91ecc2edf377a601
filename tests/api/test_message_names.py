"""Texts we send stay ours (issue 12, item 7): integrator names are one line, refused at creation
otherwise, and in the message with the code they are quoted on lines of their own under a label."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import orgs
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request
from tests.support.journey_messages import message_for
from tests.support.workflow import subject_uuid
from trust.did import web_organization_did

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")

FAKE = "Your security code: 000000. Open https://evil.example/r/x to decide"


def with_credential(**fields: Any) -> dict[str, Any]:
    body = policy_request()
    body["credentials"][0].update(fields)
    return body


def document_with(**item: Any) -> dict[str, Any]:
    return policy_request(
        credentials=[
            {
                "type": "DOCUMENT",
                "name": "Contract",
                "data": [{"label": "Clause", "type": "text", "value": "v", "hidden": False, **item}],
            }
        ]
    )


@pytest.mark.parametrize(
    ("body", "where", "found"),
    [
        (policy_request(name="Pay the rent\n\n" + FAKE), "name", "U+000A"),
        (with_credential(name="Rent payments\r\n" + FAKE), "credentials.0.name", "U+000D, U+000A"),
        (with_credential(name="Rent\u2028" + FAKE), "credentials.0.name", "U+2028"),
        (with_credential(name="Rent \u202egnp.exe"), "credentials.0.name", "U+202E"),
        (with_credential(name="Rent\x85payments"), "credentials.0.name", "U+0085"),
        (with_credential(tags=["ok", "bad\u2066tag"]), "credentials.0.tags.1", "U+2066"),
        (with_credential(internalId="ref\t1"), "credentials.0.internalId", "U+0009"),
        (policy_request(internalId="ref\x7f"), "internalId", "U+007F"),
        (document_with(label="Clause\n" + FAKE), "credentials.0.data.0.label", "U+000A"),
    ],
)
async def test_names_with_control_characters_are_refused(
    api: SignedClient,
    body: dict[str, Any],
    where: str,
    found: str,
) -> None:
    message = assert_error_shape(await api.post("/request", body), 400)["message"]
    assert message == [
        f"{where}: must be one line without control, line separator or bidi override "
        f"characters (found {found})"
    ], message


async def test_a_tricky_but_valid_name_is_quoted_on_its_own_line_under_a_label(
    api: SignedClient,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
) -> None:
    # an organization name with a line break (names come from the operator's command line, not the
    # API): the message makes it one line anyway
    org, key = orgs.create_organization(engine, cipher, "Acme\nPay at https://evil.example", 1000)
    from cli.devstack import publish_example_action

    publish_example_action(engine, org.id)
    client = SignedClient(
        api.http,
        Credentials(
            org.id,
            key.key_id,
            key.api_key,
            key.signature_secret,
            web_organization_did(settings.public_url, org.id),
        ),
    )
    name = f'Rent" {FAKE} \u201cx'
    resp = await client.post("/request", with_credential(name=name))
    assert resp.status_code == 201, resp.text
    request = resp.json()["data"]
    message = await message_for(request["id"], subject_uuid(request["subjects"][0]["id"]))
    assert "\n" not in message.subject and "Acme Pay at" in message.subject
    lines = message.text.split("\n")
    label = lines.index(
        "Acme Pay at https://evil.example asks you to review and approve the following "
        "(names as written by Acme Pay at https://evil.example):"
    )
    assert lines[label + 1] == ""
    assert lines[label + 2] == f"  - \u201cRent' {FAKE} 'x\u201d"
    assert lines[label + 3] == "" and lines[label + 4] == "Your security code:"
    assert sum("000000" in line for line in lines) == 1  # the fake code only inside the quoted name
