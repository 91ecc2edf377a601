"""The subject's messages in tests: the outbox the session's workers write to, the code, link and
page session read from a message, and the code step passed with them (``verify_otp``)."""

from __future__ import annotations

import asyncio
import base64
import os
import re
import tempfile
import time
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHandle

from adapters.delivery import Outbox, OutboxEntry
from core.otp import JourneySecrets
from workflows.ids import request_id_from_workflow_id
from workflows.messages import OTP_PASSED, VerifyOtpInput, VerifyOtpResult

# every in-process worker of the test session writes its messages here (conftest's settings)
TEST_OUTBOX = Path(tempfile.gettempdir()) / f"mandatum-test-outbox-{os.getpid()}"
# the e-mail has the code on a line of its own; an SMS starts with it
CODE_RE = re.compile(r"^(\d{6})(?:$| is | é | es | est )", re.MULTILINE)
# the approval link in a message (group 1: its path), and the page session in a step's form
LINK_RE = re.compile(r"https?://[^\s/]+(/r/[A-Za-z0-9_-]+)")
SESSION_RE = re.compile(r'name="session" value="([^"]+)"')
TEST_MASTER_KEY = base64.b64encode(b"k" * 32).decode()  # conftest.MASTER_KEY


def journey_secrets(master_key: str = TEST_MASTER_KEY) -> JourneySecrets:
    return JourneySecrets(base64.b64decode(master_key))


def code_in(text: str) -> str:
    found = CODE_RE.findall(text)
    assert len(found) == 1, f"expected one 6-digit code in the message, found {found}: {text!r}"
    return str(found[0])


async def message_for(
    request_id: str,
    subject_id: str,
    *,
    outbox: Path = TEST_OUTBOX,
    secrets: JourneySecrets | None = None,
    wait: float = 15.0,
    newer_than: str | None = None,
) -> OutboxEntry:
    """The newest message carrying the approval link of (request, subject); ``newer_than`` skips
    the message with that id and older ones (waiting for a resend)."""
    token = (secrets or journey_secrets()).link_token(request_id, subject_id)
    deadline = time.monotonic() + wait
    box = Outbox(outbox)
    while True:
        for entry in await asyncio.to_thread(box.entries, None, 2000):
            if entry.id == newer_than:
                break
            if token in entry.text:
                return entry
        if time.monotonic() > deadline:
            raise AssertionError(f"no message for subject {subject_id} of request {request_id} in {outbox}")
        await asyncio.sleep(0.05)


async def pass_otp(
    handle: WorkflowHandle[Any, Any],
    subject_id: str,
    *,
    outbox: Path = TEST_OUTBOX,
    secrets: JourneySecrets | None = None,
) -> None:
    """Confirm the subject's code the way the approval page does (its keyed hash in the update)."""
    secrets = secrets or journey_secrets()
    request_id = request_id_from_workflow_id(handle.id)
    entry = await message_for(request_id, subject_id, outbox=outbox, secrets=secrets)
    code_hash = secrets.code_hash(request_id, subject_id, code_in(entry.text))
    result = await asyncio.wait_for(
        handle.execute_update(
            "verify_otp",
            VerifyOtpInput(subject_id=subject_id, code_hash=code_hash),
            result_type=VerifyOtpResult,
        ),
        30,
    )
    assert isinstance(result, VerifyOtpResult) and result.outcome == OTP_PASSED, result


def _spellings_of(token: str) -> list[str]:
    """Other spellings that a lenient base64 decoder reads as the same bytes as ``token``."""
    last = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".index(token[-1])
    stray_bits = [
        token[:-1] + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"[last ^ b]
        for b in (1, 2, 3)
    ]  # the last character carries 2 bits beyond the 44 bytes
    standard = token.replace("-", "+").replace("_", "/")
    return [
        *stray_bits,
        token + "=",
        token + "==",
        token + "!!",
        token + " ",
        " " + token,
        token + "\n",
        token.upper() if token.upper() != token else token.lower(),
        standard if standard != token else "",
        token[:20] + "=" + token[20:],
    ]
