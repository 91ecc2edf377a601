"""One durable workflow per credential request (id ``credential-request:<requestId>``).

It waits for every subject's decision on every credential until the request expires; a timeout is
the business outcome EXPIRED. Cancel and decisions are updates, so the caller gets its answer at
once; each state change is written to the database by an activity before the update returns, and
the search attributes follow every change.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy, SearchAttributePair
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from workflows.ids import (
        SA_INTERNAL_ID,
        SA_ORGANIZATION,
        SA_SECURITY_LEVEL,
        SA_STATUS,
        ActivityNames,
    )
    from workflows.messages import (
        CancelInput,
        CancelResult,
        CredentialRequestInput,
        CredentialRequestResult,
        DecisionInput,
        DecisionResult,
        DecisionView,
        RecordCancellationInput,
        RecordDecisionInput,
        RecordExpiryInput,
        RequestStatusView,
    )

PENDING, COMPLETED, CANCELED, EXPIRED = "PENDING", "COMPLETED", "CANCELED", "EXPIRED"
DB_WRITE_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1),
                             maximum_interval=timedelta(minutes=1))


async def record(activity_name: str, arg: object) -> None:
    """Write a state change to the database; retried until it lands."""
    await workflow.execute_activity(
        activity_name, arg, start_to_close_timeout=timedelta(seconds=30),
        retry_policy=DB_WRITE_RETRY,
    )


def search_attributes_for(
    inp: CredentialRequestInput, status: str
) -> list[SearchAttributePair[str]]:
    """The typed search attributes of a request workflow, at start and after each change."""
    pairs = [
        SearchAttributePair(SA_ORGANIZATION, inp.organization_id),
        SearchAttributePair(SA_STATUS, status),
        SearchAttributePair(SA_SECURITY_LEVEL, inp.security_level),
    ]
    if inp.internal_id:
        pairs.append(SearchAttributePair(SA_INTERNAL_ID, inp.internal_id))
    return pairs


@workflow.defn(name="CredentialRequest")
class CredentialRequestWorkflow:
    def __init__(self) -> None:
        self._input: CredentialRequestInput | None = None
        self._status = PENDING
        self._canceled_at: datetime | None = None
        self._cancel_requested = False
        self._decisions: dict[tuple[str, str], DecisionView] = {}

    @workflow.run
    async def run(self, inp: CredentialRequestInput) -> CredentialRequestResult:
        self._input = inp
        remaining = inp.expires_at - workflow.now()
        try:
            await workflow.wait_condition(
                lambda: self._cancel_requested or self._all_decided(),
                timeout=max(remaining, timedelta(seconds=1)),
                timeout_summary="request expiry",
            )
        except TimeoutError:
            await record(ActivityNames.RECORD_EXPIRY, RecordExpiryInput(request_id=inp.request_id))
            self._set_status(EXPIRED)
        await workflow.wait_condition(workflow.all_handlers_finished)
        return CredentialRequestResult(request_id=inp.request_id, status=self._status)

    # --- cancel -------------------------------------------------------------------------------

    @workflow.update(name="cancel")
    async def cancel(self, inp: CancelInput) -> CancelResult:
        assert self._input is not None
        self._cancel_requested = True
        at = workflow.now()
        await record(
            ActivityNames.RECORD_CANCELLATION,
            RecordCancellationInput(request_id=self._input.request_id, canceled_at=at,
                                    canceled_by=inp.canceled_by),
        )
        self._canceled_at = at
        self._set_status(CANCELED)
        return CancelResult(canceled_at=at)

    @cancel.validator
    def _validate_cancel(self, inp: CancelInput) -> None:
        if self._cancel_requested or self._status == CANCELED:
            raise ApplicationError("The request is already canceled", type="already_canceled")
        if self._decisions:
            raise ApplicationError("A subject has already decided", type="already_decided")
        if self._status != PENDING:
            raise ApplicationError(f"The request is {self._status.lower()}", type="not_active")

    # --- decisions ----------------------------------------------------------------------------

    @workflow.update(name="decide")
    async def decide(self, inp: DecisionInput) -> DecisionResult:
        assert self._input is not None
        key = (inp.subject_id, inp.credential_id)
        decision_id = f"urn:via:decision:{workflow.uuid4()}"  # an identifier, not a secret
        at = workflow.now()
        self._decisions[key] = DecisionView(
            subject_id=inp.subject_id, credential_id=inp.credential_id, accepted=inp.accept,
            decision_id=decision_id, decided_at=at,
        )
        completes = self._all_decided()
        await record(
            ActivityNames.RECORD_DECISION,
            RecordDecisionInput(
                request_id=self._input.request_id, decision_id=decision_id,
                subject_id=inp.subject_id, credential_id=inp.credential_id, accepted=inp.accept,
                channel=inp.channel, surface=inp.surface, decided_at=at,
                completes_request=completes,
            ),
        )
        if completes:
            self._set_status(COMPLETED)
        return DecisionResult(decision_id=decision_id, decided_at=at, request_status=self._status)

    @decide.validator
    def _validate_decide(self, inp: DecisionInput) -> None:
        assert self._input is not None
        if self._status != PENDING or self._cancel_requested:
            raise ApplicationError(f"The request is {self._status.lower()}", type="not_active")
        if inp.subject_id not in self._input.subject_ids:
            raise ApplicationError("Unknown subject for this request", type="unknown_subject")
        if inp.credential_id not in self._input.credential_ids:
            raise ApplicationError("Unknown credential for this request", type="unknown_credential")
        if (inp.subject_id, inp.credential_id) in self._decisions:
            raise ApplicationError("This subject already decided on this credential",
                                   type="already_decided")

    # --- live state ---------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> RequestStatusView:
        assert self._input is not None
        total = len(self._input.subject_ids) * len(self._input.credential_ids)
        return RequestStatusView(
            request_id=self._input.request_id, status=self._status,
            expires_at=self._input.expires_at, canceled_at=self._canceled_at,
            decisions=list(self._decisions.values()), awaiting=total - len(self._decisions),
        )

    def _all_decided(self) -> bool:
        assert self._input is not None
        expected = len(self._input.subject_ids) * len(self._input.credential_ids)
        return len(self._decisions) == expected

    def _set_status(self, status: str) -> None:
        assert self._input is not None
        self._status = status
        workflow.upsert_search_attributes(
            [p.key.value_set(p.value) for p in search_attributes_for(self._input, status)]
        )
