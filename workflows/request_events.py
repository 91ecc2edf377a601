"""The webhook events of a credential request (CONTRACT 7), made and delivered from its workflow.

Each event row is made by an activity, idempotent on the fact it reports, so a retried activity
never makes a second event; its delivery is a child workflow (``webhook:<eventId>``) started from
the request workflow rather than by the activity through a client: the start is a command in the
request's history, so it happens exactly once whatever crashes, needs no client inside
activities, and links the delivery to its request in the Temporal UI. ABANDON lets the delivery
(up to 3 days) outlive the request workflow.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from datetime import datetime
from typing import Any

from temporalio import workflow
from temporalio.common import TypedSearchAttributes, WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, WorkflowAlreadyStartedError
from temporalio.workflow import ParentClosePolicy

from workflows.patches import LOCAL_RECORD_REVISION, OUTCOME_PATCH, has
from workflows.webhook_delivery import ONE_ATTEMPT, is_gone

with workflow.unsafe.imports_passed_through():
    from workflows.ids import ActivityNames, webhook_search_attributes, webhook_workflow_id
    from workflows.messages import CredentialRequestInput, DecisionInput
    from workflows.options import write_for
    from workflows.webhook_messages import (
        ATTEMPT_TIMEOUT,
        DELIVERY_REVISION,
        DELIVERY_WINDOW,
        PARENT_FAILED,
        PARENT_GONE,
        WEBHOOK_WORKFLOW_TYPE,
        CreateCredentialEventInput,
        CreateEventResult,
        CreateIdentityEventInput,
        CreateOtpFailedEventInput,
        DeliverWebhookInput,
        DeliveryResult,
    )


class RequestEvents:
    """The events of one request: ``credential`` per decision, ``otp.failed`` per code that failed,
    ``identity`` per subject's identity result. Owned by the request's workflow instance."""

    def __init__(self, inp: CredentialRequestInput) -> None:
        self._input = inp
        self._starting: set[asyncio.Task[None]] = set()  # deliveries started in the background

    async def create_credential(
        self, inp: DecisionInput, decision_id: str, at: datetime, local: bool
    ) -> dict[str, str]:
        """The ``credential`` events of this decision, one per endpoint, made (the caller delivers
        each after the subject's ``identity`` event for the same endpoint, CONTRACT 7); their ids
        by endpoint."""
        created = await write_for(
            ActivityNames.CREATE_CREDENTIAL_EVENT,
            CreateCredentialEventInput(
                request_id=self._input.request_id,
                organization_id=self._input.organization_id,
                decision_id=decision_id,
                subject_id=inp.subject_id,
                credential_id=inp.credential_id,
                accepted=inp.accept,
                decided_at=at,
            ),
            CreateEventResult,
            summary=f"credential event for {decision_id}",
            local=local,
        )
        return created.by_endpoint()

    async def emit_credential(
        self, inp: DecisionInput, decision_id: str, at: datetime, local: bool, after: dict[str, str]
    ) -> None:
        """The ``credential`` events of this decision, then their deliveries, each after the
        subject's ``identity`` event for its endpoint (``after``). From revision 1 the update
        answers without waiting for the deliveries' starts; from revision 2 the first attempts are
        this workflow's own (``send_in_background``)."""
        events = await self.create_credential(inp, decision_id, at, local)
        if self._input.revision >= LOCAL_RECORD_REVISION:
            self.send_in_background(events, "credential", after)
        elif self._input.revision >= 1:
            self.deliver_in_background(events, "credential", after)
        else:
            await self.deliver(events, "credential", after=after)

    async def otp_failed(self, subject_id: str, fact: str, code: str, message: str) -> None:
        """An ``otp.failed`` event (``fact``: undelivered or locked, with the send number), then its
        delivery."""
        created = await write_for(
            ActivityNames.CREATE_OTP_FAILED_EVENT,
            CreateOtpFailedEventInput(
                request_id=self._input.request_id,
                organization_id=self._input.organization_id,
                subject_id=subject_id,
                fact=fact,
                code=code,
                message=message,
            ),
            CreateEventResult,
            summary=f"otp.failed event ({code})",
        )
        await self.deliver(created.by_endpoint(), "otp.failed")

    async def create_identity(
        self, subject_id: str, success: bool, message: str | None, at: datetime
    ) -> dict[str, str]:
        """The subject's ``identity`` events, one per endpoint, made (not delivered yet: the caller
        keeps their ids for the subject's ``credential`` events); their ids by endpoint."""
        created = await write_for(
            ActivityNames.CREATE_IDENTITY_EVENT,
            CreateIdentityEventInput(
                request_id=self._input.request_id,
                organization_id=self._input.organization_id,
                subject_id=subject_id,
                success=success,
                message=message,
                date=at,
            ),
            CreateEventResult,
            summary=f"identity event for subject {subject_id}",
        )
        return created.by_endpoint()

    async def deliver(
        self, events: dict[str, str], event_type: str, after: dict[str, str] | None = None
    ) -> None:
        """Start each event's delivery (``events``: by endpoint), after the event ``after`` names
        for the same endpoint, if any. Each carries the organization, request and event type as
        its search attributes (histories recorded before them replay without)."""
        follow = after or {}
        for endpoint, event_id in events.items():
            # an event made before endpoints (recorded as "") is followed by every endpoint's
            await self.deliver_one(event_id, event_type, follow.get(endpoint, follow.get("")))

    def deliver_in_background(self, events: dict[str, str], event_type: str, after: dict[str, str]) -> None:
        """``deliver``, without waiting for the children's starts (revision 1): the update that
        made the events answers in the task that asks for the starts (the commands are in the
        history once it completes), and the workflow waits for them before it ends
        (``all_handed_over``: a child whose parent closed first would never start)."""
        self._in_background(self.deliver(events, event_type, after))

    def send_in_background(self, events: dict[str, str], event_type: str, after: dict[str, str]) -> None:
        """Revision 2 (ADR 24): each event's first attempt is an activity of this workflow, and its
        delivery workflow starts only when that attempt failed, for the retries. An event that
        must follow another is delivered by its workflow, which waits. The update that made the
        events answers first; the workflow waits for the attempts before it ends."""
        follow = after or {}
        for endpoint, event_id in events.items():
            earlier = follow.get(endpoint, follow.get(""))
            if earlier is None:
                self._in_background(self._send_first(event_id, event_type))
            else:
                self._in_background(self.deliver_one(event_id, event_type, earlier))

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._starting.add(task)
        task.add_done_callback(self._starting.discard)

    async def all_handed_over(self) -> None:
        """Until every delivery handed to the background has been made or started (its error
        raised here)."""
        while self._starting:
            await asyncio.gather(*self._starting)

    async def _send_first(self, event_id: str, event_type: str) -> None:
        """The event's first attempt (one POST, ``deliver_webhook``); when it failed, the event's
        delivery workflow with the retries, told how (a 410 ends it at once)."""
        began = workflow.now()
        try:
            await workflow.execute_activity(
                ActivityNames.DELIVER_WEBHOOK,
                DeliverWebhookInput(event_id=event_id, revision=DELIVERY_REVISION),
                result_type=DeliveryResult,
                start_to_close_timeout=ATTEMPT_TIMEOUT,
                schedule_to_close_timeout=DELIVERY_WINDOW,  # the activity reports the next attempt
                retry_policy=ONE_ATTEMPT,
                summary=f"deliver {event_id}",
            )
            return
        except ActivityError as exc:
            failed = PARENT_GONE if is_gone(exc) else PARENT_FAILED
        await self.deliver_one(event_id, event_type, None, first_attempt=failed, began=began)

    async def deliver_one(
        self,
        event_id: str,
        event_type: str,
        after: str | None,
        first_attempt: str | None = None,
        began: datetime | None = None,
    ) -> None:
        attributes = (
            webhook_search_attributes(self._input.organization_id, self._input.request_id, event_type)
            if has(self._input.revision, OUTCOME_PATCH)
            else None
        )
        await start_delivery(
            DeliverWebhookInput(
                event_id=event_id,
                after=after,
                revision=DELIVERY_REVISION,
                first_attempt=first_attempt,
                first_attempt_at=began,
            ),
            attributes,
        )


async def start_delivery(inp: DeliverWebhookInput, attributes: TypedSearchAttributes | None) -> None:
    """Start the event's delivery workflow as a child that may outlive its parent, once (the
    request's, and the one of support's retry of an issuance, ``workflows.credential_retry``)."""
    event_id = inp.event_id
    try:
        await workflow.start_child_workflow(
            WEBHOOK_WORKFLOW_TYPE,
            inp,
            id=webhook_workflow_id(event_id),
            parent_close_policy=ParentClosePolicy.ABANDON,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            static_summary=f"Webhook event {event_id}",
            search_attributes=attributes,
        )
    except WorkflowAlreadyStartedError:  # its delivery already exists: nothing to add
        pass
