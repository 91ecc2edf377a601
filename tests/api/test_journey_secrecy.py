"""A code never appears in plain text outside the message that carries it: not in the request
workflow's history, not in any log line, not in the database (CONTRACT 8). The journey here is
walked with plain HTTP form posts, as a browser without JavaScript would."""

from __future__ import annotations

import logging
import re
import uuid

import pytest
from sqlalchemy import text

from orchestration.temporal import request_handle
from tests.support.api_client import policy_request
from tests.support.journey_messages import LINK_RE, SESSION_RE, code_in
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of


def standalone(code: str) -> re.Pattern[str]:
    """The code as a token of its own: not a run of digits inside a random id or a hash."""
    return re.compile(rf"(?<![0-9A-Za-z]){code}(?![0-9A-Za-z])")


async def test_no_code_in_history_logs_or_tables(live: LiveStack, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    creds = live.new_org()
    contact = f"secret-{uuid.uuid4().hex[:8]}@example.com"
    created = await live.api(creds).post("/request", policy_request(contacts=[contact]))
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"]
    first = text_of(await live.smtp.wait_for(contact, timeout=20))
    [path] = LINK_RE.findall(first)
    codes = [code_in(first)]

    # a wrong code, a resend refused as too early, then the right code and an approval
    page = await live.http.get(path)
    assert page.status_code == 200 and 'name="code"' in page.text
    wrong = f"{(int(codes[0]) + 7) % 1_000_000:06d}"
    assert (await live.http.post(f"{path}/otp", data={"code": wrong})).status_code == 400
    assert (await live.http.post(f"{path}/resend", data={})).status_code == 429
    passed = await live.http.post(f"{path}/otp", data={"code": codes[0]})
    assert passed.status_code == 200, passed.text
    [session] = SESSION_RE.findall(passed.text)
    credential_id = created.json()["data"]["credentials"][0]["id"]
    decided = await live.http.post(
        f"{path}/decide", data={"session": session, f"decision-{credential_id}": "accept"}
    )
    assert decided.status_code == 200 and "Rent payments" in decided.text, decided.text

    handle = request_handle(live.temporal, request_id)
    history = (await handle.fetch_history()).to_json()
    assert "verify_otp" in history and "send_otp" in history  # the journey is in this history
    # every line of the service, Temporal's SDK and the libraries; not the test's own mail server
    # (aiosmtpd's "mail.log" prints the message it received, which carries the code by design)
    lines = [record.getMessage() for record in caplog.records if not record.name.startswith("mail.")]
    assert lines, "the journey logged nothing at all: the check below would prove nothing"
    queries = {
        "otp_challenge": "SELECT * FROM otp_challenge WHERE request_id = :r",
        "credential_request": "SELECT * FROM credential_request WHERE id = :r",
        "credential": "SELECT * FROM credential WHERE request_id = :r",
        "decision": "SELECT d.* FROM decision d JOIN credential c ON c.id = d.credential_id "
        "WHERE c.request_id = :r",
        "audit_record": "SELECT * FROM audit_record WHERE request_id = :r",
        "webhook_event": "SELECT * FROM webhook_event WHERE request_id = :r",
    }
    with live.engine.connect() as conn:
        tables = {
            name: [str(tuple(row)) for row in conn.execute(text(sql), {"r": request_id})]
            for name, sql in queries.items()
        }
    assert len(tables["otp_challenge"]) == 1 and len(tables["decision"]) == 1, tables
    rows = [row for found in tables.values() for row in found]
    for code in codes:
        pattern = standalone(code)
        assert not pattern.search(history), "a code is in the workflow history"
        assert not [line for line in lines if pattern.search(line)], "a code is in the logs"
        assert not [row for row in rows if pattern.search(row)], "a code is in the database"
    # and the checks can see a code where there is one: the message itself
    assert standalone(codes[0]).search(first)
