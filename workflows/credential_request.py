"""One durable workflow per credential request (id ``credential-request:<requestId>``).

It waits for every subject's decision on every credential until the request expires; a timeout is
the business outcome EXPIRED. Cancel and decisions are updates, so the caller gets its answer at
once; each state change is written to the database by an activity before the update returns, and
the search attributes follow every change.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ApplicationError

from workflows.decision_writes import DecisionWrites
from workflows.journey import SubjectJourney
from workflows.outcome import outcome_of, search_attributes_for
from workflows.patches import (
    JOURNEY_PATCH,
    OUTCOME_PATCH,
    TEMPORAL_CANCEL_PATCH,
    has,
    refuse_unknown_revision,
)
from workflows.request_events import RequestEvents

with workflow.unsafe.imports_passed_through():
    from core.actors import TEMPORAL
    from core.kinds import IdentityStep, RequestStatus, UpdateRefusal
    from workflows.ids import ActivityNames
    from workflows.messages import (
        TRUSTED_CHANNEL,
        CancelInput,
        CancelResult,
        CredentialRequestInput,
        CredentialRequestResult,
        DecisionInput,
        DecisionResult,
        DecisionView,
        IdentityInput,
        IdentityResult,
        OpenJourneyInput,
        OpenJourneyResult,
        RecordCancellationInput,
        RecordDecisionInput,
        RecordExpiryInput,
        RequestStatusView,
        ResendOtpInput,
        SendOtpResult,
        VerifyOtpInput,
        VerifyOtpResult,
        VerifySessionInput,
        VerifySessionResult,
    )
    from workflows.options import write
    from workflows.retry_messages import RestartIdentityInput, RestartIdentityResult

PENDING, COMPLETED, CANCELED, EXPIRED = (
    RequestStatus.PENDING,
    RequestStatus.COMPLETED,
    RequestStatus.CANCELED,
    RequestStatus.EXPIRED,
)
TEMPORAL_ACTOR = str(TEMPORAL)  # who canceled a request whose workflow an operator canceled in Temporal


# Not sandboxed (ADR 23): with the SDK's serialization contexts, each payload of each task crossed
# into the sandbox, about a tenth of the worker's CPU per decision. The code only calls Temporal's
# workflow API and the passed-through modules; tests/workflows/test_replay.py replays every
# recorded history in the sandbox too, which refuses the clock, randomness and I/O.
@workflow.defn(name="CredentialRequest", sandboxed=False)
class CredentialRequestWorkflow:
    """State: ``_outcome`` is the terminal state once something claimed it (a cancel, the decision
    that completes the request, or the expiry); from then on the validators refuse every update.
    ``_status`` is what the database says, so it changes only after the write has landed.
    """

    @workflow.init
    def __init__(self, inp: CredentialRequestInput) -> None:
        # Updates sent right after the start arrive in the first workflow task, before run()
        # begins: the handlers need the input from here.
        self._input = inp
        self._status: RequestStatus = PENDING
        self._outcome: RequestStatus | None = None
        self._canceled_at: datetime | None = None
        self._decisions: dict[tuple[str, str], DecisionView] = {}
        # each decision's answer once its update finished (None: it failed), for a second submit
        self._answers: dict[tuple[str, str], DecisionResult | None] = {}
        self._events = RequestEvents(inp)
        # the subject's journey: codes sent (count, last time), subjects who confirmed theirs,
        # identity checks. Histories recorded before the journey existed replay without it.
        self._journey = SubjectJourney(inp, self._events, has(inp.revision, JOURNEY_PATCH))
        # their record, issuance and event
        self._writes = DecisionWrites(inp, self._decisions, self._events, self._journey)
        # a cancel requested through Temporal (UI, CLI) is recorded like the API's cancel; histories
        # recorded before that replay without it
        self._temporal_cancel = has(inp.revision, TEMPORAL_CANCEL_PATCH)

    @workflow.run
    async def run(self, inp: CredentialRequestInput) -> CredentialRequestResult:
        # fails this activation, whatever the handlers of updates that came with it began
        refuse_unknown_revision(inp)
        # every subject is sent a code while the request waits, so a cancel or the expiry is never
        # held up by a slow mail server; a request that closes sends no more codes
        sending = (
            asyncio.create_task(self._journey.send_codes(inp.subject_ids), name="send codes")
            if self._journey.enabled
            else None
        )
        remaining = inp.expires_at - workflow.now()
        canceled_in_temporal = False
        try:
            await workflow.wait_condition(
                lambda: self._outcome is not None,
                timeout=max(remaining, timedelta(seconds=1)),
                timeout_summary="request expiry",
            )
        except TimeoutError:
            pass
        except asyncio.CancelledError:
            if not self._temporal_cancel:
                raise
            # an operator canceled the workflow (Temporal UI, `temporal workflow cancel`): unless
            # an update already claimed the outcome, the request is canceled like through the API
            canceled_in_temporal = self._outcome is None
            if canceled_in_temporal:
                self._outcome = CANCELED
        if not self._temporal_cancel:
            await self._close(sending)
            return CredentialRequestResult(request_id=inp.request_id, status=self._status)
        await self._uncancellable(self._close(sending, canceled_in_temporal))
        if canceled_in_temporal:  # the workflow ends as the operator asked: canceled
            raise asyncio.CancelledError("canceled in Temporal: the request is recorded CANCELED")
        return CredentialRequestResult(request_id=inp.request_id, status=self._status)

    async def _close(self, sending: asyncio.Task[None] | None, canceled_in_temporal: bool = False) -> None:
        """Record the outcome nothing claimed (the expiry, or a cancel requested in Temporal), stop
        the sends and let the updates under way finish."""
        if canceled_in_temporal:
            # decisions accepted before the cancel are stored first, as before an expiry
            await workflow.wait_condition(workflow.all_handlers_finished)
            await self._record_cancel(TEMPORAL_ACTOR)
        elif self._outcome is None:  # a timer firing with an update in the same task: the update won
            await self._expire()
        if sending is not None and not sending.done():
            sending.cancel()
        await self._finish_handlers()
        if sending is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await sending

    async def _finish_handlers(self) -> None:
        """Until the updates under way have answered and the deliveries they handed to the
        background have started, or made their first attempt (revision 2) (an update may arrive
        meanwhile: it is answered too)."""
        while True:
            await workflow.wait_condition(workflow.all_handlers_finished)
            await self._events.all_handed_over()
            if workflow.all_handlers_finished():
                return

    @staticmethod
    async def _uncancellable(work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` to its end even when the workflow is canceled meanwhile (a cancel arriving
        once the outcome is claimed changes nothing: the outcome is still recorded)."""
        task = asyncio.create_task(work)
        while True:
            try:
                await asyncio.shield(task)
                return
            except asyncio.CancelledError:
                if task.cancelled():
                    raise

    async def _expire(self) -> None:
        self._outcome = EXPIRED
        # decisions accepted before the expiry are stored before it (closing the open credentials)
        await workflow.wait_condition(workflow.all_handlers_finished)
        await write(ActivityNames.RECORD_EXPIRY, RecordExpiryInput(request_id=self._input.request_id))
        self._set_status(EXPIRED)

    def _refuse_when_closed(self) -> None:
        if self._outcome is not None:
            raise ApplicationError(f"The request is {self._outcome.lower()}", type=UpdateRefusal.NOT_ACTIVE)
        if workflow.now() >= self._input.expires_at:  # the expiry timer is about to fire
            raise ApplicationError("The request is expired", type=UpdateRefusal.NOT_ACTIVE)

    # --- cancel -------------------------------------------------------------------------------

    @workflow.update(name="cancel")
    async def cancel(self, inp: CancelInput) -> CancelResult:
        self._outcome = CANCELED
        return CancelResult(canceled_at=await self._record_cancel(inp.canceled_by, inp.reason))

    async def _record_cancel(self, canceled_by: str, reason: str | None = None) -> datetime:
        """The cancellation's write (status, time, canceler, its audit record), then the search
        attribute; the same for the API's cancel and a cancel requested in Temporal."""
        at = workflow.now()
        await write(
            ActivityNames.RECORD_CANCELLATION,
            RecordCancellationInput(
                request_id=self._input.request_id, canceled_at=at, canceled_by=canceled_by, reason=reason
            ),
        )
        self._canceled_at = at
        self._set_status(CANCELED)
        return at

    @cancel.validator
    def _validate_cancel(self, inp: CancelInput) -> None:
        if self._outcome == CANCELED:
            raise ApplicationError("The request is already canceled", type=UpdateRefusal.ALREADY_CANCELED)
        if self._decisions:  # includes a decision whose write is still under way
            raise ApplicationError("A subject has already decided", type=UpdateRefusal.ALREADY_DECIDED)
        self._refuse_when_closed()

    # --- decisions ----------------------------------------------------------------------------

    @workflow.update(name="decide")
    async def decide(self, inp: DecisionInput) -> DecisionResult:
        if self._repeats(inp):  # a second submit of the same decision: the first's answer
            key = (inp.subject_id, inp.credential_id)
            await workflow.wait_condition(lambda: key in self._answers)
            answer = self._answers[key]
            if answer is None:
                raise ApplicationError("The decision could not be recorded", type=UpdateRefusal.REFUSED)
            return answer
        return await self._decide(inp)

    def _repeats(self, inp: DecisionInput) -> bool:
        """The subject already made this same decision on this credential (its write may still be
        under way, and it may have closed the request)."""
        earlier = self._decisions.get((inp.subject_id, inp.credential_id))
        return earlier is not None and earlier.accepted == inp.accept

    async def _decide(self, inp: DecisionInput) -> DecisionResult:
        key = (inp.subject_id, inp.credential_id)
        try:
            answer = await self._decide_once(inp)
        except BaseException:
            self._answers[key] = None
            raise
        self._answers[key] = answer
        return answer

    async def _decide_once(self, inp: DecisionInput) -> DecisionResult:
        key = (inp.subject_id, inp.credential_id)
        decision_id = f"urn:via:decision:{workflow.uuid4()}"  # an identifier, not a secret
        at = workflow.now()
        self._decisions[key] = DecisionView(
            subject_id=inp.subject_id,
            credential_id=inp.credential_id,
            accepted=inp.accept,
            decision_id=decision_id,
            decided_at=at,
        )
        completes = self._all_decided()
        if completes:
            self._outcome = COMPLETED
        # a trusted browser session stood in for the code: the record says so (histories recorded
        # before sessions existed never have one, so they replay unchanged)
        trusted = self._journey.trusted_session(inp.subject_id)
        record = RecordDecisionInput(
            request_id=self._input.request_id,
            decision_id=decision_id,
            subject_id=inp.subject_id,
            credential_id=inp.credential_id,
            accepted=inp.accept,
            channel=TRUSTED_CHANNEL if trusted else inp.channel,
            surface=inp.surface,
            decided_at=at,
            completes_request=completes,
            reason=inp.reason,
            trusted_session_id=trusted,
        )
        written = await self._writes.write(inp, record)
        if completes:
            self._set_status(COMPLETED)
        return DecisionResult(
            decision_id=written.decision_id,
            decided_at=written.decided_at,
            mandate_id=written.mandate_id,
            request_status=COMPLETED if completes else PENDING,
        )

    @decide.validator
    def _validate_decide(self, inp: DecisionInput) -> None:
        # checked first: a resubmit after a submit that timed out answers as the first will,
        # also when that decision closed the request meanwhile (its handler issues no command)
        # (another choice is refused as decided, not as closed: the page shows the one recorded)
        if self._repeats(inp):
            return
        if (inp.subject_id, inp.credential_id) in self._decisions:
            raise ApplicationError(
                "This subject already decided on this credential", type=UpdateRefusal.ALREADY_DECIDED
            )
        self._refuse_when_closed()
        if inp.subject_id not in self._input.subject_ids:
            raise ApplicationError("Unknown subject for this request", type=UpdateRefusal.UNKNOWN_SUBJECT)
        if inp.credential_id not in self._input.credential_ids:
            raise ApplicationError(
                "Unknown credential for this request", type=UpdateRefusal.UNKNOWN_CREDENTIAL
            )
        if self._journey.enabled and not self._journey.code_confirmed(inp.subject_id):
            raise ApplicationError(
                "The subject has not confirmed the code sent to them", type=UpdateRefusal.OTP_REQUIRED
            )
        identity = self._journey.identity_state(inp.subject_id)
        if self._journey.enabled and identity == IdentityStep.REQUIRED:
            raise ApplicationError(
                "The security level requires an identity check first", type=UpdateRefusal.IDENTITY_REQUIRED
            )
        if identity == IdentityStep.FAILED:
            raise ApplicationError("The subject's identity check failed", type=UpdateRefusal.IDENTITY_FAILED)

    # --- the subject's journey (workflows.journey) ------------------------------------------

    @workflow.update(name="verify_otp")
    async def verify_otp(self, inp: VerifyOtpInput) -> VerifyOtpResult:
        return await self._journey.verify_otp(inp)

    @verify_otp.validator
    def _validate_verify_otp(self, inp: VerifyOtpInput) -> None:
        self._refuse_outside_journey(inp.subject_id)

    @workflow.update(name="verify_session")
    async def verify_session(self, inp: VerifySessionInput) -> VerifySessionResult:
        return await self._journey.verify_session(inp)

    @verify_session.validator
    def _validate_verify_session(self, inp: VerifySessionInput) -> None:
        self._refuse_outside_journey(inp.subject_id)
        self._refuse_when_decided_all(inp.subject_id)

    @workflow.update(name="resend_otp")
    async def resend_otp(self, inp: ResendOtpInput) -> SendOtpResult:
        return await self._journey.resend_otp(inp)

    @resend_otp.validator
    def _validate_resend_otp(self, inp: ResendOtpInput) -> None:
        self._refuse_outside_journey(inp.subject_id)
        self._refuse_when_decided_all(inp.subject_id)
        self._journey.refuse_resend(inp.subject_id)

    # support's retry of an undelivered code (issue 32): a new update, so recorded histories,
    # which never received it, replay unchanged
    @workflow.update(name="retry_code")
    async def retry_code(self, inp: ResendOtpInput) -> SendOtpResult:
        return await self._journey.retry_code(inp)

    @retry_code.validator
    def _validate_retry_code(self, inp: ResendOtpInput) -> None:
        self._refuse_outside_journey(inp.subject_id)
        self._refuse_when_decided_all(inp.subject_id)
        self._journey.refuse_code_retry(inp.subject_id)

    # support's restart of an identity check that errored at the provider (issue 32): a new update
    @workflow.update(name="restart_identity")
    async def restart_identity(self, inp: RestartIdentityInput) -> RestartIdentityResult:
        return await self._journey.restart_identity(inp)

    @restart_identity.validator
    def _validate_restart_identity(self, inp: RestartIdentityInput) -> None:
        self._refuse_when_closed()
        self._journey.refuse_identity_restart(inp.subject_id)
        self._refuse_when_decided_all(inp.subject_id)

    @workflow.update(name="open_journey")
    async def open_journey(self, inp: OpenJourneyInput) -> OpenJourneyResult:
        return await self._journey.open_journey(inp)

    @open_journey.validator
    def _validate_open_journey(self, inp: OpenJourneyInput) -> None:
        self._refuse_outside_journey(inp.subject_id)
        self._refuse_when_decided_all(inp.subject_id)

    @workflow.update(name="record_identity")
    async def record_identity(self, inp: IdentityInput) -> IdentityResult:
        await self._journey.record_identity(inp)
        if not inp.success:
            await self._decline_undecided(inp.subject_id)
        return IdentityResult(identity=self._journey.identity_state(inp.subject_id))

    @record_identity.validator
    def _validate_record_identity(self, inp: IdentityInput) -> None:
        self._refuse_when_closed()
        self._journey.refuse_identity(inp)
        self._refuse_when_decided_all(inp.subject_id)

    async def _decline_undecided(self, subject: str) -> None:
        """A failed identity check ends the subject's path: each credential they had not decided
        is declined for them, so no mandate is issued."""
        for credential_id in self._input.credential_ids:
            if (subject, credential_id) not in self._decisions and self._outcome is None:
                await self._decide(
                    DecisionInput(
                        subject_id=subject,
                        credential_id=credential_id,
                        accept=False,
                        channel=self._journey.channel(subject),
                        reason="identity_failed",
                    )
                )

    def _refuse_outside_journey(self, subject_id: str) -> None:
        """A code step needs an open request, a subject of it, and a workflow with the journey."""
        self._refuse_when_closed()
        self._journey.refuse_outside_journey(subject_id)

    def _refuse_when_decided_all(self, subject_id: str) -> None:
        if all((subject_id, c) in self._decisions for c in self._input.credential_ids):
            raise ApplicationError("The subject has already decided", type=UpdateRefusal.ALREADY_DECIDED)

    # --- live state ---------------------------------------------------------------------------

    @workflow.query(name="status")
    def status(self) -> RequestStatusView:
        total = len(self._input.subject_ids) * len(self._input.credential_ids)
        return RequestStatusView(
            request_id=self._input.request_id,
            status=self._status,
            expires_at=self._input.expires_at,
            canceled_at=self._canceled_at,
            decisions=list(self._decisions.values()),
            awaiting=total - len(self._decisions),
            otp_passed=self._journey.confirmed(),
            identity=self._journey.identity_results(),
            subjects=self._journey.progress(),
        )

    def _all_decided(self) -> bool:
        expected = len(self._input.subject_ids) * len(self._input.credential_ids)
        return len(self._decisions) == expected

    def _set_status(self, status: RequestStatus) -> None:
        self._status = status
        outcome = None
        if status != PENDING and has(self._input.revision, OUTCOME_PATCH):
            outcome = outcome_of(
                status,
                [d.accepted for d in self._decisions.values()],
                self._journey.identity_failed(),
            )
        workflow.upsert_search_attributes(
            [p.key.value_set(p.value) for p in search_attributes_for(self._input, status, outcome)]
        )
