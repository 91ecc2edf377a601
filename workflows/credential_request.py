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
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from temporalio import workflow
from temporalio.common import SearchAttributePair, WorkflowIDReusePolicy
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    WorkflowAlreadyStartedError,
)
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from core.actors import TEMPORAL
    from core.kinds import (
        IDENTITY_SOURCES,
        IdentitySource,
        IdentityStep,
        OtpOutcome,
        RequestOutcome,
        RequestStatus,
        SecurityLevel,
        SubjectIdentity,
        SubjectKyc,
        UpdateRefusal,
    )
    from workflows.ids import (
        SA_INTERNAL_ID,
        SA_ORGANIZATION,
        SA_OUTCOME,
        SA_SECURITY_LEVEL,
        SA_STATUS,
        ActivityNames,
        webhook_search_attributes,
        webhook_workflow_id,
    )
    from workflows.messages import (
        ISSUANCE_FAILED,
        MAX_SENDS,
        RESEND_INTERVAL_SECONDS,
        CancelInput,
        CancelResult,
        CheckOtpInput,
        CredentialRequestInput,
        CredentialRequestResult,
        DecisionInput,
        DecisionResult,
        DecisionView,
        IdentityInput,
        IdentityResult,
        IssueCredentialInput,
        IssueCredentialResult,
        RecordCancellationInput,
        RecordDecisionInput,
        RecordExpiryInput,
        RecordIdentityInput,
        RequestStatusView,
        ResendOtpInput,
        SendOtpInput,
        SendOtpResult,
        SubjectProgressView,
        VerifyOtpInput,
        VerifyOtpResult,
        identity_state,
    )
    from workflows.options import send, write, write_for
    from workflows.webhook_messages import (
        WEBHOOK_WORKFLOW_TYPE,
        CreateCredentialEventInput,
        CreateEventResult,
        CreateIdentityEventInput,
        CreateOtpFailedEventInput,
        DeliverWebhookInput,
    )

PENDING, COMPLETED, CANCELED, EXPIRED = (
    RequestStatus.PENDING,
    RequestStatus.COMPLETED,
    RequestStatus.CANCELED,
    RequestStatus.EXPIRED,
)
ISSUANCE_PATCH = "issue-on-acceptance"
WEBHOOK_PATCH = "webhook-events"
JOURNEY_PATCH = "subject-journey"
TEMPORAL_CANCEL_PATCH = "temporal-cancel"
QUIET_CANCEL_PATCH = "canceled-send-not-undeliverable"
ISSUANCE_FAILURE_PATCH = "issuance-failure-ends"
OUTCOME_PATCH = "outcome-search-attribute"  # MandatumOutcome and the deliveries' search attributes
# a decision's issuance and event as local activities (workflows.options.write)
LOCAL_DECISION_PATCH = "decision-writes-local"
TEMPORAL_ACTOR = str(TEMPORAL)  # who canceled a request whose workflow an operator canceled in Temporal


@dataclass
class Codes:
    """One subject's codes in this request."""

    sends: int = 0  # codes sent or being sent; the first is started with the workflow
    last_sent: datetime | None = None
    passed: bool = False  # the subject confirmed the current code
    channel: str | None = None  # where their last delivered code went (email | sms)
    undelivered: int = 0  # sends that did not reach the subject
    wrong: int = 0  # wrong tries at the current code
    wrong_total: int = 0  # wrong tries at every code of this request
    locked: bool = False  # the current code is locked by wrong tries (until a new one is sent)


@dataclass
class Identity:
    """One subject's identity check, when their request's security level requires one."""

    passed: bool | None = None  # None until a result is recorded
    event_id: str | None = None  # its ``identity`` event, which their ``credential`` events follow


def search_attributes_for(
    inp: CredentialRequestInput, status: str, outcome: str | None = None
) -> list[SearchAttributePair[str]]:
    """The typed search attributes of a request workflow, at start and after each change (the
    outcome once it is closed)."""
    pairs = [
        SearchAttributePair(SA_ORGANIZATION, inp.organization_id),
        SearchAttributePair(SA_STATUS, status),
        SearchAttributePair(SA_SECURITY_LEVEL, inp.security_level),
    ]
    if inp.internal_id:
        pairs.append(SearchAttributePair(SA_INTERNAL_ID, inp.internal_id))
    if outcome:
        pairs.append(SearchAttributePair(SA_OUTCOME, outcome))
    return pairs


def outcome_of(status: str, decisions: list[bool], identity_failed: bool) -> RequestOutcome | None:
    """A request's business outcome from its status, its decisions (accepted or not) and whether a
    subject's identity check failed; None while it is pending."""
    if status == RequestStatus.CANCELED:
        return RequestOutcome.CANCELED
    if status == RequestStatus.EXPIRED:
        return RequestOutcome.EXPIRED
    if status != RequestStatus.COMPLETED:
        return None
    if identity_failed:
        return RequestOutcome.IDENTITY_FAILED
    if all(decisions):
        return RequestOutcome.APPROVED
    return RequestOutcome.PARTLY_APPROVED if any(decisions) else RequestOutcome.REJECTED


@workflow.defn(name="CredentialRequest")
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
        self._recorded: set[tuple[str, str]] = set()  # decisions whose write has landed
        # credential id -> its mandate id once issued (None: issuance failed), so acceptors
        # deciding at once all answer with the one issuance
        self._issuing: set[str] = set()
        self._issued: dict[str, str | None] = {}
        # the subject's journey: codes sent (count, last time), subjects who confirmed theirs.
        # Histories recorded before the journey existed replay without it.
        self._journey = workflow.patched(JOURNEY_PATCH)
        self._codes = {subject: Codes() for subject in inp.subject_ids}
        self._identity = {subject: Identity() for subject in inp.subject_ids}
        # a cancel requested through Temporal (UI, CLI) is recorded like the API's cancel; histories
        # recorded before that replay without it
        self._temporal_cancel = workflow.patched(TEMPORAL_CANCEL_PATCH)

    @workflow.run
    async def run(self, inp: CredentialRequestInput) -> CredentialRequestResult:
        # every subject is sent a code while the request waits, so a cancel or the expiry is never
        # held up by a slow mail server; a request that closes sends no more codes
        sending = (
            asyncio.create_task(self._send_codes(inp.subject_ids), name="send codes")
            if self._journey
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
        await workflow.wait_condition(workflow.all_handlers_finished)
        if sending is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await sending

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

    async def _send_codes(self, subject_ids: list[str]) -> None:
        await asyncio.gather(*(self._send_code(subject) for subject in subject_ids))

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
        return await self._decide(inp)

    async def _decide(self, inp: DecisionInput) -> DecisionResult:
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
        await write(
            ActivityNames.RECORD_DECISION,
            RecordDecisionInput(
                request_id=self._input.request_id,
                decision_id=decision_id,
                subject_id=inp.subject_id,
                credential_id=inp.credential_id,
                accepted=inp.accept,
                channel=inp.channel,
                surface=inp.surface,
                decided_at=at,
                completes_request=completes,
                reason=inp.reason,
            ),
        )
        self._recorded.add(key)
        # from here on the decision's id and time are in the history (the record's input), so what
        # follows runs as local activities (histories recorded before replay them as activities)
        local = workflow.patched(LOCAL_DECISION_PATCH)
        mandate_id = None
        # histories recorded before issuance existed replay without the activity
        if inp.accept and self._accepted_by_all(inp.credential_id) and workflow.patched(ISSUANCE_PATCH):
            mandate_id = await self._issue_once(inp.credential_id, local)
        # after issuance, so an acceptance's event carries the mandate; histories recorded before
        # webhooks existed replay without it
        if workflow.patched(WEBHOOK_PATCH):
            await self._emit_credential_event(inp, decision_id, at, local)
        if completes:
            self._set_status(COMPLETED)
        return DecisionResult(
            decision_id=decision_id,
            decided_at=at,
            mandate_id=mandate_id,
            request_status=COMPLETED if completes else PENDING,
        )

    @decide.validator
    def _validate_decide(self, inp: DecisionInput) -> None:
        self._refuse_when_closed()
        if inp.subject_id not in self._input.subject_ids:
            raise ApplicationError("Unknown subject for this request", type=UpdateRefusal.UNKNOWN_SUBJECT)
        if inp.credential_id not in self._input.credential_ids:
            raise ApplicationError(
                "Unknown credential for this request", type=UpdateRefusal.UNKNOWN_CREDENTIAL
            )
        if (inp.subject_id, inp.credential_id) in self._decisions:
            raise ApplicationError(
                "This subject already decided on this credential", type=UpdateRefusal.ALREADY_DECIDED
            )
        if self._journey and not self._codes[inp.subject_id].passed:
            raise ApplicationError(
                "The subject has not confirmed the code sent to them", type=UpdateRefusal.OTP_REQUIRED
            )
        identity = self._identity_state(inp.subject_id)
        if self._journey and identity == IdentityStep.REQUIRED:
            raise ApplicationError(
                "The security level requires an identity check first", type=UpdateRefusal.IDENTITY_REQUIRED
            )
        if identity == IdentityStep.FAILED:
            raise ApplicationError("The subject's identity check failed", type=UpdateRefusal.IDENTITY_FAILED)

    async def _issue_once(self, credential_id: str, local: bool) -> str | None:
        """Issue a credential every subject accepted, once. The issuance activity reads the
        decisions from the database, so it waits until the other acceptances of the credential,
        made in concurrent updates, are written too; an acceptor arriving while it runs shares its
        result."""
        if credential_id in self._issuing:
            await workflow.wait_condition(lambda: credential_id in self._issued)
            return self._issued[credential_id]
        self._issuing.add(credential_id)
        keys = [(subject, credential_id) for subject in self._input.subject_ids]
        await workflow.wait_condition(lambda: all(k in self._recorded for k in keys))
        try:
            issued = await write_for(
                ActivityNames.ISSUE_CREDENTIAL,
                IssueCredentialInput(request_id=self._input.request_id, credential_id=credential_id),
                IssueCredentialResult,
                summary=f"issue {credential_id}",
                local=local,
            )
        except ActivityError as err:
            self._issued[credential_id] = None
            if (
                isinstance(err.cause, ApplicationError)
                and err.cause.type == ISSUANCE_FAILED
                and workflow.patched(ISSUANCE_FAILURE_PATCH)
            ):
                # the credential is FAILED (with its audit record); the decision stands, and its
                # ``credential`` event tells the integrator (the credential's status is FAILED)
                return None
            raise
        except BaseException:
            self._issued[credential_id] = None
            raise
        self._issued[credential_id] = issued.mandate_id
        return issued.mandate_id

    async def _emit_credential_event(
        self, inp: DecisionInput, decision_id: str, at: datetime, local: bool
    ) -> None:
        """A ``credential`` event for this decision, then its delivery workflow.

        The event row is made by an activity, idempotent on the decision id, so a retried activity
        never makes a second event; its delivery is a child workflow (``webhook:<eventId>``)
        started from here rather than by the activity through a client: the start is a command in
        this workflow's history, so it happens exactly once whatever crashes, needs no client
        inside activities, and links the delivery to its request in the Temporal UI. ABANDON lets
        the delivery (up to 3 days) outlive the request workflow.
        """
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
        # a subject's identity event is delivered before their credential events (CONTRACT 7)
        await self._deliver(created.event_id, "credential", after=self._identity[inp.subject_id].event_id)

    async def _deliver(self, event_id: str, event_type: str, after: str | None = None) -> None:
        """Start the event's delivery, carrying the organization, request and event type as its
        search attributes (histories recorded before them replay without)."""
        attributes = (
            webhook_search_attributes(self._input.organization_id, self._input.request_id, event_type)
            if workflow.patched(OUTCOME_PATCH)
            else None
        )
        try:
            await workflow.start_child_workflow(
                WEBHOOK_WORKFLOW_TYPE,
                DeliverWebhookInput(event_id=event_id, after=after),
                id=webhook_workflow_id(event_id),
                parent_close_policy=ParentClosePolicy.ABANDON,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                static_summary=f"Webhook event {event_id}",
                search_attributes=attributes,
            )
        except WorkflowAlreadyStartedError:  # its delivery already exists: nothing to add
            pass

    # --- the subject's journey: codes ---------------------------------------------------------

    async def _send_code(
        self, subject_id: str, resent_by: str | None = None, reason: str | None = None
    ) -> SendOtpResult:
        """Send a fresh code to the subject (the activity makes and stores it; only where it went
        comes back). A contact that cannot receive it is reported as ``otp.failed``."""
        codes = self._codes[subject_id]
        codes.sends += 1
        number = codes.sends
        codes.last_sent = workflow.now()
        codes.wrong, codes.locked = 0, False  # tries count against the code being sent
        try:
            sent = await send(
                ActivityNames.SEND_OTP,
                SendOtpInput(
                    request_id=self._input.request_id,
                    subject_id=subject_id,
                    send_number=number,
                    resent_by=resent_by,
                    reason=reason,
                ),
                SendOtpResult,
                summary=f"code {number} to subject {subject_id}",
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError) and workflow.patched(QUIET_CANCEL_PATCH):
                # the request closed while the send was under way (or before it ran): that is
                # not a contact the code cannot reach, so no ``otp.failed`` event
                raise asyncio.CancelledError("the request closed before the code was sent") from err
            # the transport kept failing: the subject has no code
            sent = SendOtpResult(
                channel="unknown",
                delivered=False,
                error_code="UNDELIVERABLE",
                error_message="The code could not be sent",
            )
        if sent.delivered:
            codes.channel = sent.channel
        if not sent.delivered:
            codes.undelivered += 1
            await self._emit_otp_failed(
                subject_id,
                f"undelivered:{number}",
                sent.error_code or "UNDELIVERABLE",
                sent.error_message or "The code could not be delivered",
            )
        return sent

    @workflow.update(name="verify_otp")
    async def verify_otp(self, inp: VerifyOtpInput) -> VerifyOtpResult:
        # a code is checked against the one stored by the send, so the first send must be done
        codes = self._codes[inp.subject_id]
        await workflow.wait_condition(lambda: codes.sends > 0)
        checked = await write_for(
            ActivityNames.CHECK_OTP,
            CheckOtpInput(
                request_id=self._input.request_id, subject_id=inp.subject_id, code_hash=inp.code_hash
            ),
            VerifyOtpResult,
            summary=f"check code of subject {inp.subject_id}",
        )
        if checked.outcome in (OtpOutcome.WRONG, OtpOutcome.LOCKED_NOW):
            codes.wrong += 1
            codes.wrong_total += 1
        if checked.outcome in (OtpOutcome.LOCKED, OtpOutcome.LOCKED_NOW):
            codes.locked = True
        if checked.outcome == OtpOutcome.PASSED:
            codes.passed = True
            await self._reuse_identity(inp.subject_id, checked.kyc, checked.identity_status)
            return checked.model_copy(update={"identity": self._identity_state(inp.subject_id)})
        if checked.outcome == OtpOutcome.LOCKED_NOW:
            await self._emit_otp_failed(
                inp.subject_id,
                f"locked:{codes.sends}",
                "INVALID_CODE_LIMIT",
                "Too many wrong codes: the code is locked until a new one is sent",
            )
        return checked

    @verify_otp.validator
    def _validate_verify_otp(self, inp: VerifyOtpInput) -> None:
        self._refuse_outside_journey(inp.subject_id)

    @workflow.update(name="resend_otp")
    async def resend_otp(self, inp: ResendOtpInput) -> SendOtpResult:
        self._codes[inp.subject_id].passed = False  # a fresh code must be confirmed again
        return await self._send_code(inp.subject_id, inp.actor, inp.reason)

    @resend_otp.validator
    def _validate_resend_otp(self, inp: ResendOtpInput) -> None:
        """CONTRACT 4: at most ``MAX_SENDS`` codes per subject, at least a minute apart."""
        self._refuse_outside_journey(inp.subject_id)
        self._refuse_when_decided_all(inp.subject_id)
        codes = self._codes[inp.subject_id]
        if codes.sends >= MAX_SENDS:
            raise ApplicationError(
                f"At most {MAX_SENDS} codes are sent to a subject", type=UpdateRefusal.TOO_MANY_SENDS
            )
        if codes.last_sent is not None:
            wait = RESEND_INTERVAL_SECONDS - (workflow.now() - codes.last_sent).total_seconds()
            if wait > 0:
                raise ApplicationError(
                    f"A new code can be sent in {int(wait) + 1} seconds",
                    int(wait) + 1,
                    type=UpdateRefusal.TOO_SOON,
                )

    def _refuse_outside_journey(self, subject_id: str) -> None:
        """A code step needs an open request, a subject of it, and a workflow with the journey."""
        self._refuse_when_closed()
        self._refuse_unknown_subject(subject_id)
        if not self._journey:
            raise ApplicationError(
                "This request was created before codes existed", type=UpdateRefusal.NO_JOURNEY
            )

    def _refuse_when_decided_all(self, subject_id: str) -> None:
        if all((subject_id, c) in self._decisions for c in self._input.credential_ids):
            raise ApplicationError("The subject has already decided", type=UpdateRefusal.ALREADY_DECIDED)

    def _refuse_unknown_subject(self, subject_id: str) -> None:
        if subject_id not in self._input.subject_ids:
            raise ApplicationError("Unknown subject for this request", type=UpdateRefusal.UNKNOWN_SUBJECT)

    async def _emit_otp_failed(self, subject_id: str, fact: str, code: str, message: str) -> None:
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
        await self._deliver(created.event_id, "otp.failed")

    # --- the subject's journey: identity (KYC) ------------------------------------------------

    def _identity_state(self, subject_id: str) -> IdentityStep:
        return identity_state(self._input.security_level, self._identity[subject_id].passed)

    async def _reuse_identity(self, subject_id: str, kyc: str | None, identity_status: str | None) -> None:
        """PLATFORM_KYC reuses an earlier platform success, ORGANIZATION_KYC a check the
        organization reported before; PLATFORM_REVALIDATION always wants a fresh check."""
        if self._identity[subject_id].passed is not None:
            return
        level = self._input.security_level
        if level == SecurityLevel.PLATFORM_KYC and kyc == SubjectKyc.VERIFIED:
            await self._record_identity(
                IdentityInput(
                    subject_id=subject_id,
                    success=True,
                    source=IdentitySource.REUSED,
                    message="An earlier platform identity check of the subject is reused",
                )
            )
        elif level == SecurityLevel.ORGANIZATION_KYC and identity_status == SubjectIdentity.VERIFIED:
            await self._record_identity(
                IdentityInput(
                    subject_id=subject_id,
                    success=True,
                    source=IdentitySource.ORGANIZATION,
                    message="Verified by the organization",
                )
            )

    @workflow.update(name="record_identity")
    async def record_identity(self, inp: IdentityInput) -> IdentityResult:
        await self._record_identity(inp)
        return IdentityResult(identity=self._identity_state(inp.subject_id))

    @record_identity.validator
    def _validate_record_identity(self, inp: IdentityInput) -> None:
        self._refuse_when_closed()
        self._refuse_unknown_subject(inp.subject_id)
        required = IDENTITY_SOURCES.get(self._input.security_level)
        if required is None:
            raise ApplicationError(
                "The request's security level requires no identity check",
                type=UpdateRefusal.IDENTITY_NOT_REQUIRED,
            )
        source = IdentitySource.PLATFORM if inp.source == IdentitySource.REUSED else inp.source
        if required != source:
            raise ApplicationError(
                f"The security level requires a {required} identity check",
                type=UpdateRefusal.WRONG_IDENTITY_SOURCE,
            )
        if self._identity[inp.subject_id].passed is not None:
            raise ApplicationError(
                "The subject's identity result is already recorded", type=UpdateRefusal.IDENTITY_RECORDED
            )
        self._refuse_when_decided_all(inp.subject_id)

    async def _record_identity(self, inp: IdentityInput) -> None:
        """Store the result and report it (``identity`` event); a failure ends the subject's path:
        each credential they had not decided is declined for them, so no mandate is issued."""
        subject = inp.subject_id
        identity = self._identity[subject]
        identity.passed = inp.success
        at = workflow.now()
        await write(
            ActivityNames.RECORD_IDENTITY,
            RecordIdentityInput(
                request_id=self._input.request_id,
                subject_id=subject,
                success=inp.success,
                source=inp.source,
                message=inp.message,
                check_id=inp.check_id,
                at=at,
            ),
        )
        created = await write_for(
            ActivityNames.CREATE_IDENTITY_EVENT,
            CreateIdentityEventInput(
                request_id=self._input.request_id,
                organization_id=self._input.organization_id,
                subject_id=subject,
                success=inp.success,
                message=inp.message,
                date=at,
            ),
            CreateEventResult,
            summary=f"identity event for subject {subject}",
        )
        identity.event_id = created.event_id
        await self._deliver(created.event_id, "identity")
        if not inp.success:
            for credential_id in self._input.credential_ids:
                if (subject, credential_id) not in self._decisions and self._outcome is None:
                    await self._decide(
                        DecisionInput(
                            subject_id=subject,
                            credential_id=credential_id,
                            accept=False,
                            channel=self._codes[subject].channel,
                            reason="identity_failed",
                        )
                    )

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
            otp_passed=sorted(s for s, codes in self._codes.items() if codes.passed),
            identity={s: i.passed for s, i in self._identity.items() if i.passed is not None},
            subjects=[
                SubjectProgressView(
                    subject_id=subject,
                    sends=codes.sends,
                    last_sent=codes.last_sent,
                    channel=codes.channel,
                    undelivered=codes.undelivered,
                    wrong_tries=codes.wrong,
                    wrong_tries_total=codes.wrong_total,
                    locked=codes.locked,
                    code_confirmed=codes.passed,
                    identity=self._identity_state(subject),
                )
                for subject, codes in self._codes.items()
            ],
        )

    def _accepted_by_all(self, credential_id: str) -> bool:
        """Every subject of the request accepted ``credential_id`` (CONTRACT 9: it becomes ACTIVE)."""
        return all(
            (found := self._decisions.get((subject, credential_id))) is not None and found.accepted
            for subject in self._input.subject_ids
        )

    def _all_decided(self) -> bool:
        expected = len(self._input.subject_ids) * len(self._input.credential_ids)
        return len(self._decisions) == expected

    def _set_status(self, status: RequestStatus) -> None:
        self._status = status
        outcome = None
        if status != PENDING and workflow.patched(OUTCOME_PATCH):
            outcome = outcome_of(
                status,
                [d.accepted for d in self._decisions.values()],
                any(i.passed is False for i in self._identity.values()),
            )
        workflow.upsert_search_attributes(
            [p.key.value_set(p.value) for p in search_attributes_for(self._input, status, outcome)]
        )
