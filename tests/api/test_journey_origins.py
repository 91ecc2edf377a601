"""Values integrators give that end up in the headers of the subject's pages (issue 12, items 4
and 5): the origins allowed to frame the approval page (CSP ``frame-ancestors``) and a request's
``redirectUrl`` (CSP ``form-action``, ``Location``). Each is refused when it is given and checked
again where the header is built, so a value stored around the checks never reaches a header."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest
from sqlalchemy import Engine, update
from sqlmodel import col

from core.origins import BadOrigin, check_url
from store import orgs
from store.db import write_session
from store.tables import CredentialRequest, Organization
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.cli import Cli, cli  # noqa: F401 (the fixture)
from tests.support.documents import LEASE, SECRET
from tests.support.journey_messages import code_in, message_for

HOSTILE_ORIGINS = [
    "https://*",
    "https://*.example.com",
    "https://a.example; sandbox allow-scripts",
    "https://a.example 'unsafe-inline'",
    "https://a.example,https://b.example",
    "'self'",
    "*",
    'https://"a.example"',
    "https://a.example/frame",
    "https://user@a.example",
    "https://0x7f.1",
    "https://2130706433",
    "https://127.1",
    "https://a.example:0",
    "https://a.example:65536",
    "https://a.example:",
    "https://a..example",
    "https://a.exa\tmple",
    "data:",
    "https://a.exam\u0000ple",
    "https://[fe80::1%eth0]",
    "https://a_b.example",
    "https://1.2.3",
    "https://a.example\r\nX-Evil: 1",
]
HOSTILE_URLS = [
    "https://a.example;sandbox;report-to/x",
    "https://a.example;sandbox/done",
    "https://user:pw@a.example/",
    "https://a.example:99999/",
    'https://a.example/"><script>alert(1)</script>',
    "javascript:alert(1)",
    "https://*/done",
    "https://a.example\\@evil.example/",
    "ftp://a.example/",
    "https:///done",
    "https://a.example/ok path",
    "http://a.example/plain-http",
    "https://0x7f.1/",
    "https://a.example/\u00e9",
    "//a.example/",
    "https://a.example/\r\nSet-Cookie: x=1",
    "https://[fe80::1%25eth0]/",
]


@pytest.mark.parametrize("origin", HOSTILE_ORIGINS)
def test_a_frame_origin_is_exactly_scheme_host_port(origin: str) -> None:
    with pytest.raises(ValueError, match="is not an HTTPS origin"):
        orgs.check_frame_origin(origin, allow_loopback_http=True)


def test_frame_origins_are_stored_as_browsers_serialize_them() -> None:
    assert orgs.check_frame_origin("HTTPS://App.Example.com:443/", False) == "https://app.example.com"
    assert (
        orgs.check_frame_origin("https://bücher.example:8443", False) == "https://xn--bcher-kva.example:8443"
    )
    assert orgs.check_frame_origin("http://[::1]:5173", True) == "http://[::1]:5173"


def test_the_command_refuses_hostile_frame_origins(cli: Cli) -> None:  # noqa: F811
    org = cli.json("org", "create", "--name", "Framed")["organizationId"]
    *refused, (code, out, err) = cli.run_all(
        *(
            (("org", "set-frame-origins", "--org", org, "https://ok.example", origin), {})
            for origin in ("https://*", "https://a.example; sandbox allow-scripts")
        ),
        (("org", "set-frame-origins", "--org", org, "https://OK.example:443"), {}),
    )
    for refused_code, _, refused_err in refused:
        assert refused_code != 0 and "is not an HTTPS origin" in refused_err, refused_err
        assert "Traceback" not in refused_err
    assert code == 0 and "https://ok.example" in out, err


async def _link(api: SignedClient, **fields: Any) -> tuple[str, str]:
    created = await api.post("/request", policy_request(contacts=["frida@example.com"], **fields))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    url = (await api.get(f"/request/link/{request_id}", params={"contact": "frida@example.com"})).json()[
        "data"
    ]["url"]
    return request_id, url.removeprefix("https://mandatum.test")


def _directives(response: httpx.Response) -> dict[str, str]:
    csp = response.headers["content-security-policy"]
    return {d.strip().split(" ", 1)[0]: d.strip().partition(" ")[2] for d in csp.split(";")}


async def test_a_stored_hostile_frame_origin_never_reaches_the_header(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    # written around the checks (an older version, a hand edit): the page checks each value again
    with write_session(engine) as session:
        session.execute(
            update(Organization)
            .where(col(Organization.id) == api.creds.organization_id)
            .values(
                frame_origins=["https://a.example; sandbox allow-scripts", "https://*", "https://ok.example"]
            )
        )
    request_id, path = await _link(api)
    framed = await http.get(path, params={"surface": "iframe", "parent": "https://ok.example"})
    assert framed.status_code == 200
    assert _directives(framed)["frame-ancestors"] == "https://ok.example"
    for parent in ("https://*", "https://a.example; sandbox allow-scripts"):
        refused = await http.get(path, params={"surface": "iframe", "parent": parent})
        assert refused.status_code == 403
        assert _directives(refused)["frame-ancestors"] == "'none'"
        assert "sandbox" not in refused.headers["content-security-policy"]
        link = await api.get(
            f"/request/link/{request_id}", params={"contact": "frida@example.com", "parent": parent}
        )
        assert_error_shape(link, 400)


@pytest.mark.parametrize("url", HOSTILE_URLS)
async def test_a_hostile_redirect_url_is_refused(api: SignedClient, url: str) -> None:
    response = await api.post("/request", policy_request(redirectUrl=url))
    assert str(assert_error_shape(response, 400)["message"]).startswith("['redirectUrl: ")


async def test_a_redirect_url_is_kept_with_its_origin_canonical(api: SignedClient) -> None:
    created = await api.post(
        "/request", policy_request(redirectUrl="HTTPS://Shop.Example:443/back?a=1;b=2#x")
    )
    assert created.status_code == 201, created.text
    assert created.json()["data"]["redirectUrl"] == "https://shop.example/back?a=1;b=2#x"
    local = await api.post("/request", policy_request(redirectUrl="http://127.0.0.1:5173/done"))
    assert local.status_code == 201, local.text  # outside production, for a local integrator


def test_production_refuses_plain_http_even_for_a_local_host() -> None:
    for url in ("http://127.0.0.1:5173/done", "http://localhost/done"):
        assert check_url(url, allow_loopback_http=True) == url
        with pytest.raises(BadOrigin, match="https"):
            check_url(url, allow_loopback_http=False)


async def test_a_stored_hostile_redirect_url_never_reaches_a_header(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine
) -> None:
    request_id, path = await _link(api, redirectUrl="https://shop.example/back")
    hostile = "https://a.example;sandbox;report-to/x"
    with write_session(engine) as session:
        session.execute(
            update(CredentialRequest)
            .where(col(CredentialRequest.id) == request_id)
            .values(redirect_url=hostile)
        )
    page = await http.get(path)
    assert page.status_code == 200
    assert _directives(page)["form-action"].split(" ")[0] == "'self'"
    assert "a.example" not in page.headers["content-security-policy"]
    assert "sandbox" not in page.headers["content-security-policy"]
    # through the code and the decision: no Location to it, no link to it on the last page
    subject = (await api.get(f"/request/{request_id}")).json()["subjects"][0]["id"]
    subject_id = subject.rsplit(":", 1)[1]
    code = code_in((await message_for(request_id, subject_id)).text)
    form = await http.post(f"{path}/otp", data={"code": code})
    assert form.status_code == 200, form.text
    session_value = form.text.split('name="session" value="', 1)[1].split('"', 1)[0]
    credential_id = form.text.split('name="decision-', 1)[1].split('"', 1)[0]
    done = await http.post(
        f"{path}/decide", data={"session": session_value, f"decision-{credential_id}": "accept"}
    )
    assert done.status_code == 200, (done.status_code, done.headers.get("location"))
    assert "location" not in done.headers and "a.example" not in done.text


@pytest.mark.parametrize("surface", ["hosted", "iframe"])
async def test_hidden_document_items_never_reach_the_subjects_browser(
    api: SignedClient, http: httpx.AsyncClient, engine: Engine, surface: str
) -> None:
    parent = "https://app.example.com"
    orgs.set_frame_origins(engine, api.creds.organization_id, [parent], False, actor="operator:tests")
    request_id, path = await _link(api, credentials=[LEASE])
    framing = {"surface": "iframe", "parent": parent} if surface == "iframe" else {}
    pages = [await http.get(path, params=framing)]
    subject = (await api.get(f"/request/{request_id}")).json()["subjects"][0]["id"]
    code = code_in((await message_for(request_id, subject.rsplit(":", 1)[1])).text)
    pages.append(await http.post(f"{path}/otp", data={"code": code, **framing}))
    session_value = pages[-1].text.split('name="session" value="', 1)[1].split('"', 1)[0]
    credential_id = pages[-1].text.split('name="decision-', 1)[1].split('"', 1)[0]
    pages.append(
        await http.post(
            f"{path}/decide",
            data={"session": session_value, f"decision-{credential_id}": "accept", **framing},
        )
    )
    pages.append(await http.get(path, params=framing))  # the page once the request is complete
    assert [p.status_code for p in pages] == [200, 200, 200, 200], [p.text[:300] for p in pages]
    for page in pages:
        assert SECRET not in page.text and "IBAN" not in page.text
    if surface == "iframe":  # the parent still learns what was decided, by id
        posted = json.loads(
            pages[2].text.split('id="mandatum-event"', 1)[1].split(">", 1)[1].split("</script>", 1)[0]
        )
        (payload,) = posted["payloads"]
        assert payload["eventType"] == "credential" and payload["decision"]["action"] == "accept"
        assert payload["credential"]["status"] == "ACTIVE"
        assert set(payload["credential"]) == {"id", "resourceType", "status", "name", "internalId"}
        # the signed webhook event keeps the whole credential for the integrator
        event = (await api.get(f"/request/{request_id}")).json()["credentials"][0]
        assert SECRET in json.dumps(event)
