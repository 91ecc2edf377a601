"""What POST /request refuses before anything is stored (issue 12): bodies nested too deeply,
values JCS cannot hold, and error messages that would echo a huge input back."""

from __future__ import annotations

import json
import secrets
from typing import Any

import pytest
from sqlalchemy import Engine, func, select
from sqlmodel import col
from temporalio.client import Client

from adapters.delivery import Outbox
from store.tables import CredentialRequest
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.journey_messages import TEST_OUTBOX
from tests.support.json_depth import depth

pytestmark = pytest.mark.usefixtures("worker", "no_server_errors")


def document_body(contact: str, fields: list[dict[str, Any]]) -> dict[str, Any]:
    return policy_request(
        contacts=[contact],
        credentials=[
            {
                "type": "DOCUMENT",
                "name": "Contract",
                "data": [
                    {"label": "Clause", "type": "text", "value": "v", "hidden": False, "fields": fields}
                ],
            }
        ],
    )


def nested_body(contact: str, total_depth: int) -> dict[str, Any]:
    """A request body whose depth is exactly ``total_depth``, the extra levels inside ``fields``."""
    inner: Any = "leaf"
    body = document_body(contact, [{"v": inner}])
    for i in range(total_depth - depth(body)):
        inner = [inner] if i % 2 else {"k": inner}
    body = document_body(contact, [{"v": inner}])
    assert depth(body) == total_depth
    return body


def stored_requests(engine: Engine, organization_id: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(CredentialRequest)
                .where(col(CredentialRequest.organization_id) == organization_id)
            ).scalar_one()
        )


async def assert_nothing_happened(api: SignedClient, engine: Engine, temporal: Client, contact: str) -> None:
    org = api.creds.organization_id
    assert stored_requests(engine, org) == 0
    started = [w async for w in temporal.list_workflows(f"MandatumOrganization = '{org}'")]
    assert started == []
    assert Outbox(TEST_OUTBOX).entries(to=contact) == []


def lines(resp: Any) -> list[str]:
    message = assert_error_shape(resp, 400)["message"]
    return [message] if isinstance(message, str) else list(message)


# --- item 3: nesting ------------------------------------------------------------------------------


@pytest.mark.parametrize("levels", [33, 500])
async def test_a_body_nested_too_deeply_is_refused_before_anything_is_stored(
    api: SignedClient,
    engine: Engine,
    temporal: Client,
    levels: int,
) -> None:
    contact = f"deep-{secrets.token_hex(4)}@example.com"
    resp = await api.post("/request", nested_body(contact, levels))
    assert lines(resp) == ["body is nested more than 32 levels deep"]
    await assert_nothing_happened(api, engine, temporal, contact)


async def test_a_body_nested_32_levels_is_accepted_and_readable(api: SignedClient) -> None:
    contact = f"deep-{secrets.token_hex(4)}@example.com"
    body = nested_body(contact, 32)
    resp = await api.post("/request", body)
    assert resp.status_code == 201, resp.text
    got = await api.get(f"/request/{resp.json()['data']['id']}")
    assert got.status_code == 200, got.text
    fields = got.json()["credentials"][0]["data"][0]["fields"]
    assert fields == body["credentials"][0]["data"][0]["fields"]


async def test_nesting_is_measured_outside_strings_only(api: SignedClient) -> None:
    brackets = "[{" * 100
    resp = await api.post("/request", policy_request(name=brackets[:200]))
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["name"] == brackets[:200]


async def test_too_deep_raw_text_with_brackets_in_strings_and_escapes(api: SignedClient) -> None:
    raw = ('{"name": "a\\"[[[[", "contacts": ' + "[" * 40 + '"x@example.com"' + "]" * 40 + "}").encode()
    json.loads(raw)
    assert lines(await api.post("/request", raw=raw)) == ["body is nested more than 32 levels deep"]


# --- item 2: numbers JCS cannot hold ---------------------------------------------------------------

BIG = 2**53  # 9007199254740992: one past the largest integer an IEEE double holds exactly


def with_user_params(contact: str, params: dict[str, Any]) -> dict[str, Any]:
    body = policy_request(contacts=[contact])
    body["credentials"][0]["action"]["userParams"] = params
    return body


@pytest.mark.parametrize("number", [BIG, -BIG, 10**40])
async def test_an_integer_beyond_2_53_in_user_params_is_refused_naming_it(
    api: SignedClient,
    engine: Engine,
    temporal: Client,
    number: int,
) -> None:
    contact = f"big-{secrets.token_hex(4)}@example.com"
    [line] = lines(await api.post("/request", with_user_params(contact, {"maxAmount": number})))
    assert line.startswith("credentials.0.action.userParams: maxAmount is "), line
    assert "2^53-1" in line
    await assert_nothing_happened(api, engine, temporal, contact)


async def test_the_largest_safe_integer_is_accepted(api: SignedClient) -> None:
    resp = await api.post("/request", with_user_params("ana@example.com", {"maxAmount": BIG - 1}))
    assert resp.status_code == 201, resp.text
    assert resp.json()["data"]["credentials"][0]["action"]["userParams"]["maxAmount"] == BIG - 1


async def test_numbers_jcs_cannot_hold_anywhere_in_document_fields_are_refused(
    api: SignedClient,
    engine: Engine,
    temporal: Client,
) -> None:
    contact = f"big-{secrets.token_hex(4)}@example.com"
    fields: list[dict[str, Any]] = [{"ok": 1}, {"terms": {"limits": [1, 2.5, -BIG - 5]}}]
    [line] = lines(await api.post("/request", document_body(contact, fields)))
    assert line.startswith("credentials.0.data.0.fields: 1.terms.limits.2 is -9007199254740997"), line
    for raw_number in ("NaN", "Infinity", "-Infinity"):
        raw = json.dumps(document_body(contact, [{"x": 0}])).replace('{"x": 0}', f'{{"x": {raw_number}}}')
        [line] = lines(await api.post("/request", raw=raw.encode()))
        assert line.startswith("credentials.0.data.0.fields: 0.x is "), line
        assert "RFC 8785" in line
    await assert_nothing_happened(api, engine, temporal, contact)


# --- item 12: error messages quote at most ~100 characters of the input ---------------------------

HUGE = secrets.token_hex(5_000)  # 10,000 characters, no 101 of them in a row may come back


def assert_short(resp: Any, status: int = 400) -> list[str]:
    message = assert_error_shape(resp, status)["message"]
    found = [message] if isinstance(message, str) else list(message)
    text = "\n".join(found)
    assert len(text) < 600, text
    assert not any(HUGE[i : i + 101] in text for i in range(len(HUGE) - 100)), text
    return found


async def test_a_huge_bad_contact_is_quoted_short(api: SignedClient) -> None:
    [line] = assert_short(await api.post("/request", policy_request(contacts=[HUGE])))
    assert line.startswith(f"contacts.0: '{HUGE[:100]}'\u2026 is not an e-mail address"), line
    assert_short(await api.post("/request", policy_request(contacts=[f"{HUGE[:300]}@example.com"])))
    request = (await api.post("/request", policy_request())).json()["data"]["id"]
    assert_short(await api.get(f"/request/link/{request}", params={"contact": HUGE}))
    assert_short(
        await api.get(f"/request/link/{request}", params={"contact": "ana@example.com", "parent": HUGE})
    )


async def test_a_huge_unknown_field_name_or_param_name_is_quoted_short(api: SignedClient) -> None:
    [line] = assert_short(await api.post("/request", policy_request(**{HUGE: 1})))
    assert line.endswith("\u2026 is not a known field"), line
    body = policy_request()
    body["credentials"][0]["action"]["userParams"] = {HUGE: 1}
    [line] = assert_short(await api.post("/request", body))
    assert line.startswith("credentials.0.action.userParams: '"), line
    assert_short(await api.post("/request", policy_request(authorizedDIDs=[HUGE])))
    fields = [{HUGE: {"x": BIG}}]
    assert_short(await api.post("/request", document_body("ana@example.com", fields)))


async def test_huge_query_and_path_values_are_quoted_short(api: SignedClient, http: Any) -> None:
    assert_short(await api.get("/activity", params={"type": HUGE}))
    assert_short(await api.get("/activity", params={"type": [HUGE[:2_000] + str(i) for i in range(20)]}))
    assert_short(await http.get(f"/credentials/status/{HUGE}"), 404)
    assert_short(await http.get(f"/subjects/{HUGE}/did.json"), 404)
    assert_short(await http.get(f"/orgs/{HUGE}/did.json"), 404)


def test_every_message_is_capped_as_a_last_guard() -> None:
    from api.errors import error_body

    one = error_body(400, "x" * 5_000)["message"]
    assert len(one) == 400 and one.endswith("\u2026")
    many = error_body(400, [f"contacts.{i}: bad" for i in range(250)])["message"]
    assert len(many) == 101 and many[-1] == "and 150 more" and many[0] == "contacts.0: bad"
