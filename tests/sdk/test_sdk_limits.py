"""A mandate with a use limit through the public SDK's release 1.2.0, unchanged (issue 31, "Must
show"): the release creates the request with its ``CredentialDto(maxExecutions=5)``, and reads the
credential's ``executionsRemaining`` through its typed ``CredentialEntity`` going 5, 4, ... 0 as
its own ``verify`` calls are allowed; after the fifth the mandate has revoked itself (INACTIVE in
1.2.0's words), a VP obtained before is denied ``credential_revoked`` and no new VP is issued.

Only the subject's side (the code and acceptance on the approval page) goes over plain HTTP."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

from cli.devstack import EXAMPLE_ACTION_ID
from tests.support.live_stack import LiveStack
from tests.support.sdk import RELEASE_120, Sdk, SdkClient, decide, new_contact, new_org, only

pytestmark = only(RELEASE_120)

USES = 5
ALLOWED = {"amount": 100, "payee": "Landlord Ltd"}  # within the approved 1200, the example's rules pass
RULES = ["amountWithinLimit", "payeeListed"]


async def detail(client: SdkClient, mandate_id: str) -> Any:
    return await client.call(client.api.credentials.detail, mandate_id, returns="CredentialEntity")


async def new_vp(client: SdkClient, mandate_id: str) -> dict[str, Any]:
    made = await client.call(
        client.api.credentials.issue_vp,
        mandate_id,
        client.sdk.models.CreatePresentationDto(),
        returns="PresentationEntity",
    )
    return dict(made.presentation)


async def test_max_executions_counts_down_to_a_denial_and_the_mandate_revoked(
    sdk: Sdk, live: LiveStack
) -> None:
    creds = new_org(live, sdk.release)
    client = sdk.client(live.url, creds)
    m, contact = sdk.models, new_contact("limits")
    credential = m.CredentialDto(
        type="POLICY",
        name="Rent payments",
        scope="payments",
        action=m.ActionDto(id=EXAMPLE_ACTION_ID, userParams={"maxAmount": 1200}),
        max_executions=USES,
    )
    body = m.GenerateRequestDto(
        credentials=[credential],
        users=[m.GenerateRequestUserDto(contact=contact)],
        name="Pay the rent five times",
        securityLevel="CONTACT",
    )
    created = await client.call(client.api.requests.create, body, returns="GenerateRequestEntity")
    await decide(live, {"credentials": [{"id": c.id} for c in created.credentials]}, contact)

    async def issued() -> Any:
        found = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
        return found if found.credentials[0].status == "ACTIVE" else None

    request = await until_async(issued, f"the mandate of request {created.id}")
    [mandate] = request.credentials
    assert mandate.executions_remaining == USES
    # the bound signed into the mandate (1.2.0 gives the signed credential as it is, a dict)
    assert mandate.w3c_credential["credentialSubject"]["mandate"]["maxExecutions"] == USES

    remaining = [(await detail(client, mandate.id)).executions_remaining]
    spare: dict[str, Any] | None = None
    for use in range(1, USES + 1):
        vp = await new_vp(client, mandate.id)
        if use == USES:  # obtained while the mandate can still be presented: verified after its end
            spare = await new_vp(client, mandate.id)
        check = m.VerifyPresentationDto(presentation=vp, executionParams=ALLOWED)
        allowed = await client.call(client.api.credentials.verify, check, returns="VerifyAllowResponseEntity")
        assert (allowed.decision, allowed.credential_id) == ("allow", mandate.id)
        assert [(e.rule, e.result) for e in allowed.evaluations] == [(rule, "pass") for rule in RULES]
        now = await detail(client, mandate.id)
        remaining.append(now.executions_remaining)
        assert now.status == ("ACTIVE" if use < USES else "INACTIVE"), now
    assert remaining == [5, 4, 3, 2, 1, 0]

    assert spare is not None
    late = m.VerifyPresentationDto(presentation=spare, executionParams=ALLOWED)
    denied = await client.refusal(
        client.api.credentials.verify, late, status=403, returns="VerifyDenyResponseEntity"
    )
    assert (denied.decision, denied.reason, denied.credential_id) == (
        "deny",
        "credential_revoked",
        mandate.id,
    )
    assert denied.evaluations == []

    ended = await detail(client, mandate.id)
    assert (ended.status, ended.inactive_at, ended.executions_remaining) == (
        "INACTIVE",
        {"reason": "REVOKED"},
        0,
    )
    assert ended.w3c_credential["id"] == mandate.id
    refused = await client.refusal(
        client.api.credentials.issue_vp,
        mandate.id,
        m.CreatePresentationDto(),
        status=400,
        returns="CredentialsIssueVP400Response",
    )
    assert refused.status_code == 400 and refused.message, refused
    again = await client.call(client.api.requests.detail, created.id, returns="RequestDetailEntity")
    assert [(c.status, c.executions_remaining) for c in again.credentials] == [("INACTIVE", 0)]


async def until_async(check: Callable[[], Awaitable[Any]], what: str, seconds: float = 30.0) -> Any:
    """``await check()``'s first truthy value, polled every 50 ms."""
    deadline = time.monotonic() + seconds
    while True:
        found = await check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        await asyncio.sleep(0.05)
