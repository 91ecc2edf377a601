"""Saved histories of real runs replay on today's workflow code.

A change to workflows/credential_request.py that would break workflows already running (a new
activity, timer or ordering in an old code path, without ``workflow.patched``) fails here.
Histories come from tests/histories/make_histories.py.
"""

from __future__ import annotations

import base64
import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from temporalio import workflow
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.worker import Replayer

from tests.histories.make_histories import EXPECTED
from tests.support.histories import HISTORIES, load
from tests.support.sandboxed_request import SandboxedRequest
from workflows.credential_request import CredentialRequestWorkflow
from workflows.ids import ActivityNames
from workflows.messages import (
    CancelInput,
    CancelResult,
    CredentialRequestInput,
    CredentialRequestResult,
    DecisionInput,
    DecisionResult,
    RecordExpiryInput,
)

FILES = sorted(HISTORIES.glob("*.json"))


def test_every_scenario_has_a_history() -> None:
    assert {p.stem for p in FILES} == set(EXPECTED)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
async def test_history_replays(path: Path) -> None:
    """On the workflow as the worker runs it (unsandboxed), and in Temporal's sandbox, which
    refuses a non-deterministic call (the clock, randomness, I/O) the code might have made."""
    history = load(path)
    for defined in (CredentialRequestWorkflow, SandboxedRequest):
        replayer = Replayer(workflows=[defined], data_converter=pydantic_data_converter)
        result = await replayer.replay_workflow(history)
        assert result.replay_failure is None, defined
    last = history.events[-1]
    if last.HasField("workflow_execution_canceled_event_attributes"):  # canceled in Temporal
        assert EXPECTED[path.stem] == "CANCELED"
        return
    [payload] = last.workflow_execution_completed_event_attributes.result.payloads
    assert json.loads(payload.data)["status"] == EXPECTED[path.stem]


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_history_holds_no_secrets(path: Path) -> None:
    text = path.read_text()
    payloads = [base64.b64decode(m).decode() for m in re.findall(r'"data": "([^"]+)"', text)]
    everything = "\n".join([text, *payloads])
    assert "@" not in everything  # no contact, no worker identity (pid@host)
    assert "mdt_" not in everything  # no API key
    assert "example.com" not in everything  # the contacts the recording used


@workflow.defn(name="CredentialRequest", sandboxed=False)
class ChangedWorkflow:
    """The workflow after a careless change: it records the expiry before waiting at all."""

    @workflow.init
    def __init__(self, inp: CredentialRequestInput) -> None:
        self._done = False

    @workflow.run
    async def run(self, inp: CredentialRequestInput) -> CredentialRequestResult:
        await workflow.execute_activity(
            ActivityNames.RECORD_EXPIRY,
            RecordExpiryInput(request_id=inp.request_id),
            start_to_close_timeout=timedelta(seconds=30),
        )
        await workflow.wait_condition(lambda: self._done)
        return CredentialRequestResult(request_id=inp.request_id, status="EXPIRED")

    @workflow.update(name="cancel")
    async def cancel(self, inp: CancelInput) -> CancelResult:
        await workflow.wait_condition(lambda: self._done)
        return CancelResult(canceled_at=workflow.now())

    @workflow.update(name="decide")
    async def decide(self, inp: DecisionInput) -> DecisionResult:
        await workflow.wait_condition(lambda: self._done)
        return DecisionResult(decision_id="", decided_at=workflow.now(), request_status="PENDING")


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
async def test_a_breaking_change_fails_replay(path: Path) -> None:
    """The check above can fail: the same histories refuse a workflow that changed its commands."""
    replayer = Replayer(workflows=[ChangedWorkflow], data_converter=pydantic_data_converter)
    with pytest.raises(workflow.NondeterminismError):
        await replayer.replay_workflow(load(path))
