"""A decision's writes in one activity (revision 3, ADR 27): the record, the credential's issuance
when the decision completes it, and the ``credential`` event, in that order.

Each step is the activity it replaces, called in turn, and each is idempotent: a retry (or a
workflow task run again) writes nothing twice and answers as the first run did. The event comes
last, so an acceptance's event carries the mandate it issued.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from temporalio.exceptions import ApplicationError

from activities.definition import defn
from activities.mandates import MandateActivities
from activities.requests import RequestActivities
from activities.webhooks import WebhookActivities
from workflows.ids import ActivityNames
from workflows.messages import (
    ISSUANCE_FAILED,
    DecisionWritten,
    IssueCredentialInput,
    WriteDecisionInput,
)
from workflows.webhook_messages import CreateCredentialEventInput


class DecisionActivities:
    def __init__(
        self, requests: RequestActivities, mandates: MandateActivities, webhooks: WebhookActivities
    ) -> None:
        self._requests, self._mandates, self._webhooks = requests, mandates, webhooks

    @defn(name=ActivityNames.WRITE_DECISION)
    def write_decision(self, inp: WriteDecisionInput) -> DecisionWritten:
        """The decision as stored decides the rest (ADR 24): a rejection stored by an earlier
        submit issues nothing, whatever this one said."""
        record = inp.record
        stored = self._requests.record_decision(record)
        issued, failed = None, False
        if stored.accepted and inp.issue_if_accepted:
            try:
                issued = self._mandates.issue_credential(
                    IssueCredentialInput(request_id=record.request_id, credential_id=record.credential_id)
                )
            except ApplicationError as err:
                if err.type != ISSUANCE_FAILED:  # not issuable: the update fails, as on revision 2
                    raise
                failed = True  # the credential is FAILED; its event says so
        events = self._webhooks.create_credential_event(
            CreateCredentialEventInput(
                request_id=record.request_id,
                organization_id=inp.organization_id,
                decision_id=stored.decision_id,
                subject_id=record.subject_id,
                credential_id=record.credential_id,
                accepted=stored.accepted,
                decided_at=stored.decided_at,
            )
        )
        return DecisionWritten(decision=stored, issued=issued, issuance_failed=failed, events=events)

    def all(self) -> list[Callable[..., Any]]:
        return [self.write_decision]
