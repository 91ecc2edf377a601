"""Activities that write the request workflow's state changes to the database.

Each says what it changed once (``core.observe.events``): what the row held before the write tells
a first run from a retry of a write that had already committed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from temporalio import activity

from activities.definition import defn
from core.actors import TEMPORAL, Actor
from core.kinds import RequestStatus
from core.observe import events
from services import requests
from store import requests as store
from store import retries
from store.db import read_session
from store.tables import CredentialRequest
from workflows.ids import ActivityNames
from workflows.messages import (
    RecordCancellationInput,
    RecordDecisionInput,
    RecordedDecision,
    RecordExpiryInput,
)
from workflows.retry_messages import RestartIdentityRecord, RestartIdentityResult


@dataclass(frozen=True)
class _Before:
    organization_id: str
    pending: bool  # the request was still PENDING


def _before(engine: Engine, request_id: str) -> _Before | None:
    with read_session(engine) as session:
        req = session.get(CredentialRequest, request_id)
        if req is None:
            return None
        return _Before(req.organization_id, req.status == RequestStatus.PENDING)


def _closed(before: _Before | None, request_id: str, outcome: str) -> None:
    if before is not None and before.pending:
        events.request_closed(
            organization_id=before.organization_id,
            request_id=request_id,
            workflow_id=activity.info().workflow_id,
            outcome=outcome,
        )


class RequestActivities:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @defn(name=ActivityNames.RECORD_CANCELLATION)
    def record_cancellation(self, inp: RecordCancellationInput) -> None:
        before = _before(self._engine, inp.request_id)
        # the canceler the workflow was given (an API key, an operator), or ``temporal``
        try:
            actor = Actor.parse(inp.canceled_by)
        except ValueError:  # a spelling of no known actor (an older history, a test): kept as given
            store.record_cancellation(
                self._engine, inp.request_id, inp.canceled_at, inp.canceled_by, inp.reason
            )
        else:
            requests.record_cancellation(self._engine, actor, inp.request_id, inp.canceled_at, inp.reason)
        _closed(before, inp.request_id, "canceled")

    @defn(name=ActivityNames.RECORD_EXPIRY)
    def record_expiry(self, inp: RecordExpiryInput) -> None:
        before = _before(self._engine, inp.request_id)
        requests.record_expiry(self._engine, TEMPORAL, inp.request_id)
        _closed(before, inp.request_id, "expired")

    @defn(name=ActivityNames.RECORD_DECISION)
    def record_decision(self, inp: RecordDecisionInput) -> RecordedDecision:
        """The decision written once per subject and credential; the one stored is the answer (an
        earlier run's, or another submit's that was written first: ADR 24)."""
        before = _before(self._engine, inp.request_id)
        stored = requests.record_decision(self._engine, Actor.subject(inp.subject_id), inp)
        recorded = RecordedDecision(
            decision_id=stored.decision_id, decided_at=stored.decided_at, accepted=stored.accepted
        )
        if before is None or not stored.written:
            return recorded
        events.decision_recorded(
            organization_id=before.organization_id,
            request_id=inp.request_id,
            workflow_id=activity.info().workflow_id,
            subject_id=inp.subject_id,
            credential_id=inp.credential_id,
            accepted=inp.accepted,
            channel=inp.channel,
            surface=inp.surface,
        )
        if inp.completes_request:
            _closed(before, inp.request_id, "completed")
        return recorded

    @defn(name=ActivityNames.RESTART_IDENTITY)
    def restart_identity(self, inp: RestartIdentityRecord) -> RestartIdentityResult:
        """Support's restart of a subject's identity check that errored at the provider (issue 32):
        its unreported checks closed, with the record naming who and why, once."""
        return RestartIdentityResult(
            checks=retries.restart_identity(
                self._engine, inp.request_id, inp.subject_id, inp.actor, inp.reason
            )
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.record_cancellation, self.record_expiry, self.record_decision, self.restart_identity]
