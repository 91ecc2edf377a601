"""``requests.resend_otp`` through each SDK release, naming the subject each way it can (contact,
DID, internal id). A fresh code is sent at least a minute after the last one (CONTRACT 4), so the
module makes every request it needs at once and waits that minute once, in its first test (in real
time: the live stack runs on the dev server; this module has nothing else to do meanwhile, and the
other workers go on)."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass

import pytest
import pytest_asyncio

from tests.support.api_client import Credentials
from tests.support.live_stack import LiveStack
from tests.support.sdk import (
    RELEASES,
    Sdk,
    create_request,
    message_to,
    new_contact,
    pass_code,
)

RESEND_AFTER = 62.0  # seconds after the first code: CONTRACT 4's minute, and a margin
SELECTORS = ("contact", "id", "internal_id")


@dataclass
class Waiting:
    """One request per (release, selector), its subject sent a first code at ``sent``."""

    creds: Credentials
    requests: dict[tuple[str, str], tuple[str, str, str, str]]  # -> (request id, contact, DID, ref)
    sent: float


@pytest_asyncio.fixture(scope="module", loop_scope="session")
async def waiting(live: LiveStack) -> Waiting:
    creds = live.new_org()
    made: dict[tuple[str, str], tuple[str, str, str, str]] = {}
    for release in RELEASES:
        for selector in SELECTORS:
            contact, ref = new_contact("resend"), f"subject-{release.version}-{selector}"
            request = await create_request(live, creds, contacts=[{"contact": contact, "internalId": ref}])
            made[(release.version, selector)] = (request["id"], contact, request["subjects"][0]["id"], ref)
    for _, contact, _, _ in made.values():
        await message_to(live, contact)
    return Waiting(creds, made, time.monotonic())


@pytest.mark.parametrize("selector", SELECTORS)
async def test_resend_a_code(sdk: Sdk, live: LiveStack, waiting: Waiting, selector: str) -> None:
    request_id, contact, did, ref = waiting.requests[(sdk.release.version, selector)]
    await asyncio.sleep(max(0.0, waiting.sent + RESEND_AFTER - time.monotonic()))
    client = sdk.client(live.url, waiting.creds)
    subject = {"contact": contact, "id": did, "internal_id": ref}[selector]
    sent = await client.call(
        client.api.requests.resend_otp, request_id, returns="SuccessEntity", **{selector: subject}
    )
    assert sent.success is True
    # the subject got a second message, and its code is the one that works now
    await pass_code(live, await message_to(live, contact, nth=2))
