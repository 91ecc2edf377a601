"""Activities that write the request workflow's state changes to the database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine
from temporalio import activity

from store import requests as store
from workflows.ids import ActivityNames
from workflows.messages import RecordCancellationInput, RecordDecisionInput, RecordExpiryInput


class RequestActivities:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @activity.defn(name=ActivityNames.RECORD_CANCELLATION)
    def record_cancellation(self, inp: RecordCancellationInput) -> None:
        store.record_cancellation(self._engine, inp.request_id, inp.canceled_at, inp.canceled_by)

    @activity.defn(name=ActivityNames.RECORD_EXPIRY)
    def record_expiry(self, inp: RecordExpiryInput) -> None:
        store.record_expiry(self._engine, inp.request_id)

    @activity.defn(name=ActivityNames.RECORD_DECISION)
    def record_decision(self, inp: RecordDecisionInput) -> None:
        store.record_decision(
            self._engine,
            inp.decision_id,
            inp.request_id,
            inp.credential_id,
            inp.subject_id,
            inp.accepted,
            inp.channel,
            inp.surface,
            inp.decided_at,
            inp.completes_request,
            reason=inp.reason,
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.record_cancellation, self.record_expiry, self.record_decision]
