"""The subject's journey in a credential request: the one-time codes sent to each subject
(sending, checking, the lock after wrong tries, resends; CONTRACT 4 and 8) and the identity check
(KYC) the request's security level requires.

``SubjectJourney`` holds each subject's codes and identity result for the request workflow
(``workflows.credential_request``), which owns it and delegates to it. The workflow keeps the
update handlers (``verify_otp``, ``resend_otp``, ``record_identity``), the checks that concern the
whole request (closed, already decided), and what follows a failed identity check (declining
each credential the subject had not decided). Deterministic code only: it runs in the workflow.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from datetime import datetime

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, CancelledError

from workflows.patches import QUIET_CANCEL_PATCH, has
from workflows.request_events import RequestEvents

with workflow.unsafe.imports_passed_through():
    from core.kinds import (
        IDENTITY_SOURCES,
        IdentitySource,
        IdentityStep,
        OtpOutcome,
        SecurityLevel,
        SubjectIdentity,
        SubjectKyc,
        UpdateRefusal,
    )
    from workflows.ids import ActivityNames
    from workflows.messages import (
        MAX_SENDS,
        RESEND_INTERVAL_SECONDS,
        CheckOtpInput,
        CheckSessionInput,
        CheckSessionResult,
        CredentialRequestInput,
        IdentityInput,
        OpenJourneyInput,
        OpenJourneyResult,
        RecordIdentityInput,
        ResendOtpInput,
        SendLinkInput,
        SendOtpInput,
        SendOtpResult,
        SubjectProgressView,
        VerifyOtpInput,
        VerifyOtpResult,
        VerifySessionInput,
        VerifySessionResult,
        identity_state,
    )
    from workflows.options import send, write, write_for
    from workflows.retry_messages import RestartIdentityInput, RestartIdentityRecord, RestartIdentityResult


@dataclass
class Codes:
    """One subject's codes in this request."""

    sends: int = 0  # codes sent or being sent; the first is started with the workflow
    last_sent: datetime | None = None
    passed: bool = False  # the subject confirmed the current code
    channel: str | None = None  # where their last delivered code went (email | sms)
    undelivered: int = 0  # sends that did not reach the subject
    last_undelivered: bool = False  # the last code sent did not reach them (support may retry it)
    wrong: int = 0  # wrong tries at the current code
    wrong_total: int = 0  # wrong tries at every code of this request
    locked: bool = False  # the current code is locked by wrong tries (until a new one is sent)
    # the trusted browser session that stood in for the code (issue 36), None after a code
    trusted_session: str | None = None


@dataclass
class Identity:
    """One subject's identity check, when their request's security level requires one."""

    passed: bool | None = None  # None until a result is recorded
    # its ``identity`` events by endpoint, which their ``credential`` events follow
    events: dict[str, str] = field(default_factory=dict)


class SubjectJourney:
    """Every subject's codes and identity check in one request. ``enabled`` is false for a
    workflow started before the journey existed: its history replays without any of it."""

    def __init__(self, inp: CredentialRequestInput, events: RequestEvents, enabled: bool) -> None:
        self._input = inp
        self._events = events
        self.enabled = enabled
        self._codes = {subject: Codes() for subject in inp.subject_ids}
        self._identity = {subject: Identity() for subject in inp.subject_ids}

    # --- codes --------------------------------------------------------------------------------

    async def send_codes(self, subject_ids: list[str]) -> None:
        """Each subject's first message: the code with the link, or for a subject with a secondary
        contact the link alone (their code waits until they open it, ``open_journey``)."""
        later = set(self._input.codes_on_open)
        await asyncio.gather(
            *(
                self.send_link(subject) if subject in later else self.send_code(subject)
                for subject in subject_ids
            )
        )

    async def send_link(self, subject_id: str) -> None:
        """The link without a code to the subject's contact; one that cannot receive it is reported
        as ``otp.failed`` (the subject cannot reach their code without it)."""
        try:
            sent = await send(
                ActivityNames.SEND_LINK,
                SendLinkInput(request_id=self._input.request_id, subject_id=subject_id),
                SendOtpResult,
                summary=f"link to subject {subject_id}",
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError):
                raise asyncio.CancelledError("the request closed before the link was sent") from err
            sent = SendOtpResult(
                channel="unknown",
                delivered=False,
                error_code="UNDELIVERABLE",
                error_message="The link could not be sent",
            )
        if not sent.delivered:
            self._codes[subject_id].undelivered += 1
            await self._events.otp_failed(
                subject_id,
                "undelivered:link",
                sent.error_code or "UNDELIVERABLE",
                sent.error_message or "The link could not be delivered",
            )

    async def open_journey(self, inp: OpenJourneyInput) -> OpenJourneyResult:
        """The subject opened their link: a subject whose code waits for that is sent it now (to
        their secondary contact), once; a later open, or a subject sent a code before, sends none."""
        codes = self._codes[inp.subject_id]
        if inp.subject_id not in self._input.codes_on_open or codes.sends > 0:
            return OpenJourneyResult(code_sent=False)
        sent = await self.send_code(inp.subject_id)
        return OpenJourneyResult(code_sent=True, delivered=sent.delivered)

    async def send_code(
        self, subject_id: str, resent_by: str | None = None, reason: str | None = None, retry: bool = False
    ) -> SendOtpResult:
        """Send a fresh code to the subject (the activity makes and stores it; only where it went
        comes back). A contact that cannot receive it is reported as ``otp.failed``."""
        codes = self._codes[subject_id]
        codes.sends += 1
        number = codes.sends
        codes.last_sent = workflow.now()
        codes.wrong, codes.locked = 0, False  # tries count against the code being sent
        sent = await self._sent(subject_id, number, resent_by, reason, retry)
        codes.last_undelivered = not sent.delivered
        if sent.delivered:
            codes.channel = sent.channel
        if not sent.delivered:
            codes.undelivered += 1
            await self._events.otp_failed(
                subject_id,
                f"undelivered:{number}",
                sent.error_code or "UNDELIVERABLE",
                sent.error_message or "The code could not be delivered",
            )
        return sent

    async def _sent(
        self, subject_id: str, number: int, resent_by: str | None, reason: str | None, retry: bool = False
    ) -> SendOtpResult:
        """The send activity's answer; UNDELIVERABLE when the transport kept failing. A support
        retry (issue 32) names itself in the Temporal UI."""
        summary = f"code {number} to subject {subject_id}"
        if retry:
            summary = f"retry of an undelivered code by {resent_by}: {summary}"
        try:
            return await send(
                ActivityNames.SEND_OTP,
                SendOtpInput(
                    request_id=self._input.request_id,
                    subject_id=subject_id,
                    send_number=number,
                    resent_by=resent_by,
                    reason=reason,
                ),
                SendOtpResult,
                summary=summary,
            )
        except ActivityError as err:
            if isinstance(err.cause, CancelledError) and has(self._input.revision, QUIET_CANCEL_PATCH):
                # the request closed while the send was under way (or before it ran): that is
                # not a contact the code cannot reach, so no ``otp.failed`` event
                raise asyncio.CancelledError("the request closed before the code was sent") from err
            # the transport kept failing: the subject has no code
            return SendOtpResult(
                channel="unknown",
                delivered=False,
                error_code="UNDELIVERABLE",
                error_message="The code could not be sent",
            )

    async def verify_otp(self, inp: VerifyOtpInput) -> VerifyOtpResult:
        """Check the code the subject entered; a right one may reuse an earlier identity check, a
        wrong one counts towards the lock (``otp.failed`` when it locks the code)."""
        # a code is checked against the one stored by the send, so the first send must be done
        codes = self._codes[inp.subject_id]
        # (a subject whose code waits for their link to be opened has none until then: no wait)
        waits = inp.subject_id in self._input.codes_on_open
        await workflow.wait_condition(lambda: codes.sends > 0 or waits)
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
            codes.trusted_session = None  # confirmed by the code itself
            await self._reuse_identity(inp.subject_id, checked.kyc, checked.identity_status)
            return checked.model_copy(update={"identity": self.identity_state(inp.subject_id)})
        if checked.outcome == OtpOutcome.LOCKED_NOW:
            await self._events.otp_failed(
                inp.subject_id,
                f"locked:{codes.sends}",
                "INVALID_CODE_LIMIT",
                "Too many wrong codes: the code is locked until a new one is sent",
            )
        return checked

    async def resend_otp(self, inp: ResendOtpInput) -> SendOtpResult:
        self._codes[inp.subject_id].passed = False  # a fresh code must be confirmed again
        self._codes[inp.subject_id].trusted_session = None
        return await self.send_code(inp.subject_id, inp.actor, inp.reason)

    async def retry_code(self, inp: ResendOtpInput) -> SendOtpResult:
        """Support's retry of a code that could not be delivered (issue 32), once the channel
        works: a fresh code as a resend sends it, outside the subject's own limits
        (``refuse_code_retry``)."""
        self._codes[inp.subject_id].passed = False  # a fresh code must be confirmed again
        self._codes[inp.subject_id].trusted_session = None
        return await self.send_code(inp.subject_id, inp.actor, inp.reason, retry=True)

    async def verify_session(self, inp: VerifySessionInput) -> VerifySessionResult:
        """A trusted browser session in place of the code (issue 36): the activity checks it (the
        request allows sessions; the session is this subject's, open and unexpired). A valid one
        confirms the subject as a right code does, so the identity check the level requires is
        still asked (or an earlier one reused, as after a code); an invalid one changes nothing."""
        codes = self._codes[inp.subject_id]
        if codes.passed:  # confirmed already (by a code, or a session): nothing to check or change
            return VerifySessionResult(passed=True, identity=self.identity_state(inp.subject_id))
        checked = await write_for(
            ActivityNames.CHECK_TRUSTED_SESSION,
            CheckSessionInput(
                request_id=self._input.request_id, subject_id=inp.subject_id, token_hash=inp.token_hash
            ),
            CheckSessionResult,
            summary=f"check trusted session of subject {inp.subject_id}",
        )
        if checked.session_id is None:
            return VerifySessionResult(passed=False, identity=self.identity_state(inp.subject_id))
        codes.passed = True
        codes.trusted_session = checked.session_id
        await self._reuse_identity(inp.subject_id, checked.kyc, checked.identity_status)
        return VerifySessionResult(passed=True, identity=self.identity_state(inp.subject_id))

    def trusted_session(self, subject_id: str) -> str | None:
        """The trusted session that confirmed the subject in place of a code, if one did."""
        return self._codes[subject_id].trusted_session

    def code_confirmed(self, subject_id: str) -> bool:
        return self._codes[subject_id].passed

    def channel(self, subject_id: str) -> str | None:
        """Where the subject's last delivered code went (email | sms), if any."""
        return self._codes[subject_id].channel

    # --- what the workflow's validators ask ---------------------------------------------------

    def refuse_outside_journey(self, subject_id: str) -> None:
        """A code step needs a subject of the request and a workflow with the journey."""
        self.refuse_unknown_subject(subject_id)
        if not self.enabled:
            raise ApplicationError(
                "This request was created before codes existed", type=UpdateRefusal.NO_JOURNEY
            )

    def refuse_unknown_subject(self, subject_id: str) -> None:
        if subject_id not in self._input.subject_ids:
            raise ApplicationError("Unknown subject for this request", type=UpdateRefusal.UNKNOWN_SUBJECT)

    def refuse_resend(self, subject_id: str) -> None:
        """CONTRACT 4: at most ``MAX_SENDS`` codes per subject, at least a minute apart."""
        codes = self._codes[subject_id]
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

    def refuse_code_retry(self, subject_id: str) -> None:
        """Support's retry (issue 32): only while the subject's last code was not delivered. It is
        not held by CONTRACT 4's limits (5 codes, a minute apart), which failed sends may have used
        up: one retry per undelivered send, since a retry delivered ends the undelivered state and
        one that fails again is a new undelivered send."""
        if not self._codes[subject_id].last_undelivered:
            raise ApplicationError(
                "The subject's last code was delivered (or none was sent): nothing to retry",
                type=UpdateRefusal.NOTHING_UNDELIVERED,
            )

    def refuse_identity_restart(self, subject_id: str) -> None:
        """Support's restart (issue 32): a subject of a request with a platform check and no identity
        result yet; a failed check (a result) stays failed."""
        self.refuse_unknown_subject(subject_id)
        if IDENTITY_SOURCES.get(self._input.security_level) != IdentitySource.PLATFORM:
            raise ApplicationError(
                "The request's security level asks no platform identity check",
                type=UpdateRefusal.IDENTITY_NOT_REQUIRED,
            )
        if self._identity[subject_id].passed is not None:
            raise ApplicationError(
                "The subject's identity result is already recorded", type=UpdateRefusal.IDENTITY_RECORDED
            )

    def refuse_identity(self, inp: IdentityInput) -> None:
        """An identity result for a subject of the request, from the source its security level
        requires, recorded once."""
        self.refuse_unknown_subject(inp.subject_id)
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

    # --- identity (KYC) -----------------------------------------------------------------------

    def identity_state(self, subject_id: str) -> IdentityStep:
        return identity_state(self._input.security_level, self._identity[subject_id].passed)

    def identity_failed(self) -> bool:
        """A subject's identity check failed."""
        return any(i.passed is False for i in self._identity.values())

    def identity_events(self, subject_id: str) -> dict[str, str]:
        """The subject's ``identity`` events by endpoint, which their ``credential`` events follow
        (CONTRACT 7)."""
        return self._identity[subject_id].events

    async def _reuse_identity(self, subject_id: str, kyc: str | None, identity_status: str | None) -> None:
        """PLATFORM_KYC reuses an earlier platform success, ORGANIZATION_KYC a check the
        organization reported before; PLATFORM_REVALIDATION always wants a fresh check."""
        if self._identity[subject_id].passed is not None:
            return
        level = self._input.security_level
        if level == SecurityLevel.PLATFORM_KYC and kyc == SubjectKyc.VERIFIED:
            await self.record_identity(
                IdentityInput(
                    subject_id=subject_id,
                    success=True,
                    source=IdentitySource.REUSED,
                    message="An earlier platform identity check of the subject is reused",
                )
            )
        elif level == SecurityLevel.ORGANIZATION_KYC and identity_status == SubjectIdentity.VERIFIED:
            await self.record_identity(
                IdentityInput(
                    subject_id=subject_id,
                    success=True,
                    source=IdentitySource.ORGANIZATION,
                    message="Verified by the organization",
                )
            )

    async def restart_identity(self, inp: RestartIdentityInput) -> RestartIdentityResult:
        """Close the subject's checks the provider never reported, so the approval page offers a
        fresh one; the activity's summary names the restart, who asked and why."""
        return await write_for(
            ActivityNames.RESTART_IDENTITY,
            RestartIdentityRecord(
                request_id=self._input.request_id,
                subject_id=inp.subject_id,
                actor=inp.actor,
                reason=inp.reason,
            ),
            RestartIdentityResult,
            summary=f"restart identity check of subject {inp.subject_id} by {inp.actor}: {inp.reason}",
        )

    async def record_identity(self, inp: IdentityInput) -> None:
        """Store the result and report it (``identity`` event). A failure ends the subject's path:
        the workflow then declines each credential they had not decided, so no mandate is issued."""
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
        identity.events = await self._events.create_identity(subject, inp.success, inp.message, at)
        await self._events.deliver(identity.events, "identity")

    # --- live state ---------------------------------------------------------------------------

    def confirmed(self) -> list[str]:
        """The subjects who confirmed their current code."""
        return sorted(s for s, codes in self._codes.items() if codes.passed)

    def identity_results(self) -> dict[str, bool]:
        return {s: i.passed for s, i in self._identity.items() if i.passed is not None}

    def progress(self) -> list[SubjectProgressView]:
        return [
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
                identity=self.identity_state(subject),
            )
            for subject, codes in self._codes.items()
        ]
