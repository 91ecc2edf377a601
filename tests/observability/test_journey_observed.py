"""A whole journey, watched: request created, a code by e-mail and one by SMS, both entered, both
subjects accept, the mandate issued, a VP, two verifications (allow, then the replay denied), the
webhook events delivered. Then:

- ``/metrics`` (scraped over HTTP before and after) moved by exactly the business events the logs
  hold, and the journey's own events are the ones expected;
- the request id of an HTTP call reached the workflow's start and the activities it caused;
- no log line, of the API or the worker, of any logger at DEBUG, as JSON or as text, holds a contact
  (as typed or normalized), a code, a link token, a page session, the API key, its signature secret,
  the webhook's secrets, the master key, the SMS provider's token or the VP's proofs.
"""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from collections.abc import Callable
from typing import Any
from urllib.parse import quote

import httpx
from prometheus_client.parser import text_string_to_metric_families

from core.observe import metrics
from core.secretbox import SecretCipher
from tests.observability.conftest import Captured
from tests.support.api_client import policy_request
from tests.support.journey_messages import LINK_RE, SESSION_RE, TEST_MASTER_KEY, code_in
from tests.support.live_stack import LiveStack, SmsProvider
from tests.support.smtp_server import text_of
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, receiving
from tests.support.webhooks import configure
from wire.contacts import normalize_contact
from workflows.ids import request_workflow_id

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def scrape(port: int) -> Samples:
    async with httpx.AsyncClient() as http:
        answer = await http.get(f"http://127.0.0.1:{port}/metrics")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    key = (name, frozenset(labels.items()))
    return after.get(key, 0.0) - before.get(key, 0.0)


async def until(check: Callable[[], bool], what: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        await asyncio.sleep(0.05)


def standalone(value: str) -> re.Pattern[str]:
    """``value`` as a token of its own (a code's digits inside a random id do not count)."""
    return re.compile(rf"(?<![0-9A-Za-z]){re.escape(value)}(?![0-9A-Za-z])", re.IGNORECASE)


async def walk(live: LiveStack, link_path: str, code: str, credential_id: str, request_id: str) -> str:
    """The subject's pages: the link, the code, the approval; the page session they were given."""
    page = await live.http.get(link_path)
    assert page.status_code == 200 and 'name="code"' in page.text
    passed = await live.http.post(f"{link_path}/otp", data={"code": code})
    assert passed.status_code == 200, passed.text
    [session] = SESSION_RE.findall(passed.text)
    decided = await live.http.post(
        f"{link_path}/decide",
        data={"session": session, f"decision-{credential_id}": "accept"},
        headers={"X-Request-Id": request_id},
    )
    assert decided.status_code == 200 and decided.headers["x-request-id"] == request_id, decided.text
    return str(session)


async def test_a_journey_in_metrics_and_logs(live: LiveStack, captured_logs: Captured) -> None:
    logs = captured_logs
    server = metrics.serve("127.0.0.1", 0, "test")
    assert server is not None
    try:
        before = await scrape(server.port)
        found = await journey(live, logs)
        after = await scrape(server.port)
    finally:
        await asyncio.to_thread(server.close)
    org = found["org"]
    mine = {"organization_id": org}

    # the journey's own events, each once
    assert [e["channel"] for e in logs.events("code.sent", **mine)] in (["email", "sms"], ["sms", "email"])
    assert len(logs.events("decision.recorded", decision="accept", **mine)) == 2
    assert len(logs.events("request.closed", outcome="completed", **mine)) == 1
    assert len(logs.events("mandate.issued", **mine)) == 1
    assert len(logs.events("verification.decided", decision="allow", **mine)) == 1
    assert len(logs.events("verification.decided", decision="deny", reason="vp_already_used", **mine)) == 1
    assert len(logs.events("webhook.delivered", **mine)) == 2
    assert not logs.events("code.failed", **mine) and not logs.events("webhook.attempt_failed", **mine)
    for event in logs.events("code.sent", **mine) + logs.events("mandate.issued", **mine):
        assert event["request_id"] == found["request_id"]
        assert event["workflow_id"] == request_workflow_id(found["request_id"])

    # /metrics moved by exactly the events logged meanwhile (the journey's, and any other's)
    def moved(name: str, labels: dict[str, str], event: str, fields: dict[str, Any]) -> None:
        lines = logs.events(event, **fields)
        assert delta(before, after, name, **labels) == len(lines), (name, labels, len(lines))

    for channel in ("email", "sms"):
        moved("mandatum_codes_sent_total", {"channel": channel}, "code.sent", {"channel": channel})
    moved("mandatum_decisions_total", {"decision": "accept"}, "decision.recorded", {"decision": "accept"})
    moved(
        "mandatum_request_outcomes_total",
        {"outcome": "completed"},
        "request.closed",
        {"outcome": "completed"},
    )
    allow, deny = {"decision": "allow", "reason": "none"}, {"decision": "deny", "reason": "vp_already_used"}
    moved(
        "mandatum_verifications_total", allow, "verification.decided", {"decision": "allow", "reason": None}
    )
    moved("mandatum_verifications_total", deny, "verification.decided", deny)
    moved("mandatum_webhook_deliveries_total", {"result": "delivered"}, "webhook.delivered", {})
    assert delta(before, after, "mandatum_mandates_issued_total") == len(logs.events("mandate.issued"))
    assert delta(before, after, "mandatum_codes_sent_total", channel="email") >= 1
    assert delta(before, after, "mandatum_verifications_total", decision="allow", reason="none") >= 1
    latencies = [e for e in logs.events("webhook.delivered") if "latency_seconds" in e]
    assert delta(before, after, "mandatum_webhook_delivery_latency_seconds_count") == len(latencies) >= 2
    # the HTTP metrics by route template, as the access lines say
    for route, status in (
        ("/credential/verify", "200"),
        ("/credential/verify", "403"),
        ("/r/{token}/otp", "200"),
    ):
        lines = logs.events("http.request", method="POST", route=route, status=int(status))
        assert (
            delta(before, after, "mandatum_http_requests_total", method="POST", route=route, status=status)
            == len(lines)
            >= 1
        ), (route, status)
    assert (
        delta(before, after, "mandatum_audit_append_seconds_count") >= 7
    )  # created, 2 decisions, issued, VP, 2 verifies

    # the request id of the HTTP call reached the workflow's start and the activities it caused
    create_id, decide_ids = found["create_id"], found["decide_ids"]
    [access] = [
        line
        for line in logs.events("http.request", route="/request", method="POST")
        if line["x_request_id"] == create_id
    ]
    assert (access["status"], access["organization_id"]) == (201, org)
    workflow_id = request_workflow_id(found["request_id"])
    started = [
        line
        for line in logs.lines()
        if line["message"].startswith("workflow started") and line.get("workflow_id") == workflow_id
    ]
    assert [line["x_request_id"] for line in started] == [create_id]
    assert {e["x_request_id"] for e in logs.events("code.sent", **mine)} == {create_id}
    assert {e["x_request_id"] for e in logs.events("decision.recorded", **mine)} == set(decide_ids)

    # nothing secret in any line, JSON or text
    assert len(logs.lines()) > 50 and logs.text.count("\n") >= len(logs.lines())
    for name, value in found["secrets"].items():
        pattern = standalone(value)
        for kind, text in (("JSON", logs.json_text), ("text", logs.text)):
            hit = pattern.search(text)
            assert hit is None, (
                f"{name} is in the {kind} log: ...{text[max(hit.start() - 200, 0) : hit.end() + 50]}..."
            )
    assert standalone(found["secrets"]["code (e-mail)"]).search(found["message"])  # the check can see one


async def journey(live: LiveStack, logs: Captured) -> dict[str, Any]:
    creds = live.new_org()
    org = creds.organization_id
    email = f"Obs.Person-{uuid.uuid4().hex[:8]}@Example.COM"
    phone = f"+35191{uuid.uuid4().int % 10_000_000:07d}"
    create_id, decide_ids = (
        f"create.{uuid.uuid4().hex[:12]}",
        [f"decide-{i}-{uuid.uuid4().hex[:8]}" for i in (1, 2)],
    )
    api = live.api(creds)
    with receiving(lambda n: 204) as receiver:
        configure(live.engine, SecretCipher(live.settings.master_key_bytes()), org, receiver)
        created = await api.post(
            "/request", policy_request(contacts=[email, phone]), headers={"X-Request-Id": create_id}
        )
        assert created.status_code == 201 and created.headers["x-request-id"] == create_id, created.text
        request = created.json()["data"]
        credential_id = request["credentials"][0]["id"]
        mail = text_of(await live.smtp.wait_for(email, timeout=20))
        await until(lambda: bool(live.sms.to(phone)), "the SMS")
        [sms] = live.sms.to(phone)
        codes = {"email": code_in(mail), "sms": code_in(sms["text"])}
        links = {"email": LINK_RE.findall(mail)[0], "sms": LINK_RE.findall(sms["text"])[0]}
        sessions = [
            await walk(live, links[channel], codes[channel], credential_id, rid)
            for channel, rid in zip(("email", "sms"), decide_ids, strict=True)
        ]
        await until(lambda: bool(logs.events("mandate.issued", organization_id=org)), "the issuance")
        got = await api.get(f"/request/{request['id']}")
        [credential] = got.json()["credentials"]
        assert (got.json()["status"], credential["status"]) == ("COMPLETED", "ACTIVE"), got.text
        presented = await api.post(f"/credential/{quote(credential['id'], safe='')}/presentation")
        assert presented.status_code == 200, presented.text
        vp = presented.json()["data"]["presentation"]
        body = {"presentation": vp, "executionParams": {"amount": 100, "payee": "Bob"}}
        allowed = await api.post("/credential/verify", body)
        assert allowed.status_code == 200 and allowed.json()["decision"] == "allow", allowed.text
        replayed = await api.post("/credential/verify", body)
        assert replayed.status_code == 403 and replayed.json()["reason"] == "vp_already_used", replayed.text
        await until(lambda: len(logs.events("webhook.delivered", organization_id=org)) >= 2, "the webhooks")
        assert receiver.count() == 2
    normalized_email, _ = normalize_contact(email)
    secrets = {
        "contact as typed": email,
        "contact normalized": normalized_email,
        "phone": phone,
        "phone digits": phone[1:],
        "phone national": phone[4:],
        "code (e-mail)": codes["email"],
        "code (SMS)": codes["sms"],
        "API key": creds.api_key,
        "signature secret": creds.secret,
        "webhook signature secret": SIGNATURE_SECRET,
        "webhook encryption secret": ENCRYPTION_SECRET,
        "webhook salt": SALT,
        "master key": TEST_MASTER_KEY,
        "master key bytes": "k" * 32,
        "SMS provider token": SmsProvider.TOKEN,
        "VP proof": vp["proof"]["proofValue"],
        "VP challenge": vp["proof"]["challenge"],
        "mandate proof": vp["verifiableCredential"]["proofs"][0]["proofValue"],
    }
    for channel in ("email", "sms"):
        secrets[f"link token ({channel})"] = links[channel].rsplit("/", 1)[1]
    for n, session in enumerate(sessions):
        secrets[f"page session {n}"] = session
    return {
        "org": org,
        "request_id": request["id"],
        "create_id": create_id,
        "decide_ids": decide_ids,
        "secrets": secrets,
        "message": mail,
    }
