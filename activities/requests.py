"""Activities that write the request workflow's state changes to the database."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine

from activities.definition import defn
from core.actors import TEMPORAL, Actor
from services import requests
from store import requests as store
from workflows.ids import ActivityNames
from workflows.messages import RecordCancellationInput, RecordDecisionInput, RecordExpiryInput


class RequestActivities:
    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @defn(name=ActivityNames.RECORD_CANCELLATION)
    def record_cancellation(self, inp: RecordCancellationInput) -> None:
        # the canceler the workflow was given (an API key, an operator), or ``temporal``
        try:
            actor = Actor.parse(inp.canceled_by)
        except ValueError:  # a spelling of no known actor (an older history, a test): kept as given
            store.record_cancellation(
                self._engine, inp.request_id, inp.canceled_at, inp.canceled_by, inp.reason
            )
            return
        requests.record_cancellation(self._engine, actor, inp.request_id, inp.canceled_at, inp.reason)

    @defn(name=ActivityNames.RECORD_EXPIRY)
    def record_expiry(self, inp: RecordExpiryInput) -> None:
        requests.record_expiry(self._engine, TEMPORAL, inp.request_id)

    @defn(name=ActivityNames.RECORD_DECISION)
    def record_decision(self, inp: RecordDecisionInput) -> None:
        requests.record_decision(self._engine, Actor.subject(inp.subject_id), inp)

    def all(self) -> list[Callable[..., Any]]:
        return [self.record_cancellation, self.record_expiry, self.record_decision]
