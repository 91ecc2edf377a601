"""``PATCH /request/resend`` (CONTRACT 4): a fresh code, at most 5 per subject, at least 60 s apart.

Runs on the time-skipping server, so the minute between sends is skipped, not waited.
"""

from __future__ import annotations

from typing import Any

from temporalio.testing import WorkflowEnvironment

from orchestration.temporal import request_handle
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from tests.support.journey_messages import code_in, journey_secrets, message_for
from tests.support.workflow import executor, sends_returned, ts_queue  # noqa: F401 (fixtures)
from workflows.messages import RequestStatusView, SubjectProgressView, VerifyOtpInput, VerifyOtpResult


async def check(env: WorkflowEnvironment, request_id: str, subject_id: str, code: str) -> str:
    code_hash = journey_secrets().code_hash(request_id, subject_id, code)
    result = await request_handle(env.client, request_id).execute_update(
        "verify_otp", VerifyOtpInput(subject_id=subject_id, code_hash=code_hash), result_type=VerifyOtpResult
    )
    return str(result.outcome)


async def test_resend_limits_and_a_fresh_code(ts_env: WorkflowEnvironment, ts_api: SignedClient) -> None:
    created = await ts_api.post("/request", policy_request(contacts=["ana@example.com", "+351912345678"]))
    assert created.status_code == 201, created.text
    data: dict[str, Any] = created.json()["data"]
    request_id = data["id"]
    ana_did = data["subjects"][0]["id"]
    ana = ana_did.rsplit(":", 1)[1]
    first = await message_for(request_id, ana)
    path = f"/request/resend/{request_id}"

    too_soon = await ts_api.request("PATCH", path, params={"contact": "ana@example.com"})
    assert_error_shape(too_soon, 429)
    assert 1 <= int(too_soon.headers["Retry-After"]) <= 60

    await ts_env.sleep(61)
    resent = await ts_api.request("PATCH", path, params={"id": ana_did})
    assert resent.status_code == 200 and resent.json() == {"success": True}, resent.text
    second = await message_for(request_id, ana, newer_than=first.id)
    assert second.id != first.id
    old, new = code_in(first.text), code_in(second.text)
    if old != new:  # one chance in a million that they are equal
        assert await check(ts_env, request_id, ana, old) == "wrong"  # the old code is replaced
    assert await check(ts_env, request_id, ana, new) == "passed"

    for _ in range(3):  # sends 3, 4 and 5
        await ts_env.sleep(61)
        again = await ts_api.request("PATCH", path, params={"contact": "ANA@example.com"})
        assert again.status_code == 200, again.text
    await ts_env.sleep(61)
    sixth = await ts_api.request("PATCH", path, params={"contact": "ana@example.com"})
    assert "5" in assert_error_shape(sixth, 429)["message"]

    # the other subject (an SMS contact) has its own count
    phone = await ts_api.request("PATCH", path, params={"contact": "+351912345678"})
    assert phone.status_code == 200, phone.text
    other = data["subjects"][1]["id"].rsplit(":", 1)[1]

    # each resend is in the trail, by the key that asked for it; a code sent at the start is not
    trail = await ts_api.get(
        "/activity", params={"type": "OTP_RESENT", "requestId": request_id, "pageSize": 100}
    )
    assert trail.status_code == 200, trail.text
    rows = trail.json()["data"]
    assert sorted(
        (r["data"]["subject"], r["data"]["sendNumber"], r["data"]["channel"]) for r in rows
    ) == sorted([(ana, n, "email") for n in (2, 3, 4, 5)] + [(other, 2, "sms")])
    assert {(r["actor"], r["requestId"]) for r in rows} == {(f"apiKey:{ts_api.creds.key_id}", request_id)}
    await end(ts_env, ts_api, request_id)


async def end(env: WorkflowEnvironment, api: SignedClient, request_id: str) -> None:
    """Cancel the request and see its workflow end while this module's worker still runs: a
    workflow left open on the time-skipping server without a worker stops time skipping for the
    tests after it. No send may still be under way then (``sends_returned``)."""
    await sends_returned(request_handle(env.client, request_id))
    assert (await api.delete(f"/request/{request_id}")).status_code == 200
    await request_handle(env.client, request_id).result()


async def test_resend_names_exactly_one_subject_of_the_request(
    ts_env: WorkflowEnvironment, ts_api: SignedClient
) -> None:
    created = await ts_api.post("/request", policy_request(contacts=["ana@example.com"]))
    request_id = created.json()["data"]["id"]
    path = f"/request/resend/{request_id}"
    assert_error_shape(await ts_api.request("PATCH", path), 400)
    both = await ts_api.request("PATCH", path, params={"contact": "ana@example.com", "internalId": "x"})
    assert "exactly one" in assert_error_shape(both, 400)["message"]
    assert_error_shape(await ts_api.request("PATCH", path, params={"contact": "bob@example.com"}), 404)
    assert_error_shape(await ts_api.request("PATCH", path, params={"contact": "not a contact"}), 400)
    assert_error_shape(
        await ts_api.request("PATCH", "/request/resend/" + "0" * 24, params={"contact": "ana@example.com"}),
        404,
    )
    await end(ts_env, ts_api, request_id)
    assert_error_shape(await ts_api.request("PATCH", path, params={"contact": "ana@example.com"}), 409)


async def test_a_resend_asked_for_on_the_subjects_page_is_recorded_as_theirs(
    ts_env: WorkflowEnvironment, ts_api: SignedClient
) -> None:
    created = await ts_api.post("/request", policy_request(contacts=["ana@example.com"]))
    request_id = created.json()["data"]["id"]
    ana = created.json()["data"]["subjects"][0]["id"].rsplit(":", 1)[1]
    first = await message_for(request_id, ana)
    token = journey_secrets().link_token(request_id, ana)
    await ts_env.sleep(61)
    page = await ts_api.http.post(f"/r/{token}/resend", data={})
    assert page.status_code == 200, page.text
    await message_for(request_id, ana, newer_than=first.id)
    trail = await ts_api.get("/activity", params={"type": "OTP_RESENT", "requestId": request_id})
    assert [(r["actor"], r["data"]["sendNumber"]) for r in trail.json()["data"]] == [(f"subject:{ana}", 2)]
    await end(ts_env, ts_api, request_id)


async def test_the_status_query_shows_each_subjects_sends_tries_lock_and_identity_never_a_secret(
    ts_env: WorkflowEnvironment, ts_api: SignedClient
) -> None:
    created = await ts_api.post("/request", policy_request(contacts=["ana@example.com"]))
    data = created.json()["data"]
    request_id, ana = data["id"], data["subjects"][0]["id"].rsplit(":", 1)[1]
    first = await message_for(request_id, ana)
    handle = request_handle(ts_env.client, request_id)

    async def progress() -> SubjectProgressView:
        view = await handle.query("status", result_type=RequestStatusView)
        (only,) = view.subjects
        assert only.subject_id == ana
        return only

    fresh = await progress()
    assert (fresh.sends, fresh.channel, fresh.wrong_tries, fresh.locked, fresh.code_confirmed) == (
        1,
        "email",
        0,
        False,
        False,
    )
    assert fresh.identity == "not_required" and fresh.undelivered == 0
    wrong = "000000" if code_in(first.text) != "000000" else "111111"
    outcomes = [await check(ts_env, request_id, ana, wrong) for _ in range(6)]
    assert outcomes == ["wrong"] * 4 + ["locked_now", "locked"]
    locked = await progress()
    assert (locked.wrong_tries, locked.wrong_tries_total, locked.locked) == (5, 5, True)

    await ts_env.sleep(61)
    resent = await ts_api.request(
        "PATCH", f"/request/resend/{request_id}", params={"contact": "ana@example.com"}
    )
    assert resent.status_code == 200, resent.text
    second = await message_for(request_id, ana, newer_than=first.id)
    again = await progress()
    assert (again.sends, again.wrong_tries, again.wrong_tries_total, again.locked) == (2, 0, 5, False)
    assert await check(ts_env, request_id, ana, code_in(second.text)) == "passed"
    done = await progress()
    assert done.code_confirmed and done.wrong_tries == 0

    shown = (await handle.query("status", result_type=RequestStatusView)).model_dump_json()
    for secret in (
        "ana@example.com",
        code_in(first.text),
        code_in(second.text),
        journey_secrets().link_token(request_id, ana),
    ):
        assert secret not in shown
    await end(ts_env, ts_api, request_id)
