"""Support's retries of a request (issue 32, item 1): the dashboard (owner, support), the operators'
area and ``mandatum request retry`` call these, each with a required reason, naming the actor.

- ``retry_issuance``: a credential whose issuance failed for good (``FAILED``) is issued again
  from the same decisions and evidence by its own workflow, ``credential-retry:<credentialId>``
  (``workflows.credential_retry``), which writes ``MANDATE_ISSUANCE_RETRIED`` (who, why), issues
  it and sends the integrator's ``credential`` event, once. A second request while it runs, or
  after it succeeded, answers with that retry; after a retry that failed (the content still
  cannot be signed) a new one may start.
- ``retry_code``: a subject whose last code could not be delivered (``otp.failed`` undelivered) is
  sent a fresh one once the channel works, by the request workflow's ``retry_code`` update. The
  rule: support may send one more code per undelivered send, whatever the subject's own limits
  (5 codes, a minute apart; failed sends may have used them up); a retry that is delivered ends
  it, one that fails again is another undelivered send. ``OTP_RESENT`` names the actor and reason.
- ``restart_identity``: a subject's platform identity check that errored at the provider (it was
  never reported: it stays PENDING) is closed as ``ERROR`` by the request workflow's
  ``restart_identity`` update, so the subject's approval page (their link) offers a fresh check;
  ``IDENTITY_CHECK_RESTARTED`` names the actor and reason. A failed check stays failed.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from temporalio.client import WorkflowFailureError

from core.actors import Actor
from core.ids import UUID_PATTERN, is_object_id
from core.kinds import CredentialStatus
from core.text import quote_input
from orchestration.retries import issuance_retry
from orchestration.temporal import temporal_unavailable
from services import operator_search, requests
from services.audit import checked_reason
from services.context import Context
from services.errors import Conflict, Invalid, NotFound, Unavailable
from services.operators import require_operator
from store import retries as store
from store.db import run_db
from workflows.ids import credential_retry_workflow_id
from workflows.messages import ResendOtpInput, SendOtpResult
from workflows.retry_messages import RestartIdentityInput, RestartIdentityResult, RetryIssuanceInput

SUBJECT_RE = re.compile(UUID_PATTERN)
RETRY_WAIT_SECONDS = 20.0  # how long a caller waits for the retry before it answers "under way"


@dataclass(frozen=True)
class IssuanceRetry:
    """A retry's answer: ``issued`` with the mandate and its ``credential`` event, or still
    ``running`` (the credential is issued when its workflow ends)."""

    credential_id: str
    request_id: str
    workflow_id: str
    state: str  # issued | running
    mandate_id: str | None = None
    event_id: str | None = None


def check_credential_id(credential_id: str) -> None:
    if not is_object_id(credential_id):
        raise Invalid(
            f"credentialId {quote_input(credential_id)} is not a credential id: "
            "24 lower-case hexadecimal characters"
        )


async def retry_issuance(
    ctx: Context, actor: Actor, org_id: str, credential_id: str, reason: str, request_id: str | None = None
) -> IssuanceRetry:
    """Issue the organization's FAILED credential again (see the module). ``NotFound`` for none of
    the organization's (or of ``request_id``, when a request's page asks); ``Conflict`` for a
    credential that is not FAILED and was never retried, or whose retry failed again;
    ``Unavailable`` when Temporal does not answer."""
    why = checked_reason(reason)
    check_credential_id(credential_id)
    found = await run_db(ctx.engine, store.find_credential, ctx.engine, credential_id, org_id)
    if found is None or request_id not in (None, found.request_id):
        raise NotFound(f"Credential {credential_id} not found")
    inp = RetryIssuanceInput(
        request_id=found.request_id,
        organization_id=found.organization_id,
        credential_id=found.credential_id,
        actor=str(actor),
        reason=why,
    )
    may_start = found.status == CredentialStatus.FAILED
    try:
        handle = await issuance_retry(ctx.client(), ctx.settings.task_queue, inp, may_start)
    except Exception as exc:
        if temporal_unavailable(exc):
            raise Unavailable("Temporal is not answering: nothing was retried; try again shortly") from exc
        raise
    if handle is None:
        raise Conflict(
            f"Credential {credential_id} is {found.status}: only a FAILED credential is issued again"
        )
    answer = IssuanceRetry(
        found.credential_id, found.request_id, credential_retry_workflow_id(credential_id), "running"
    )
    try:
        result = await asyncio.wait_for(handle.result(), RETRY_WAIT_SECONDS)
    except TimeoutError:
        return answer
    except WorkflowFailureError as exc:
        raise Conflict(
            f"Credential {credential_id} could not be issued again: its content still cannot be "
            "signed, and it is FAILED again"
        ) from exc
    return IssuanceRetry(
        answer.credential_id,
        answer.request_id,
        answer.workflow_id,
        "issued",
        result.mandate_id,
        result.event_id,
    )


async def operator_retry_issuance(
    ctx: Context, actor: Actor, credential_id: str, reason: str, request_id: str | None = None
) -> IssuanceRetry:
    """``retry_issuance`` from the operators' area or the command line: any organization's."""
    require_operator(actor)
    why = checked_reason(reason)
    check_credential_id(credential_id)
    org_id = await asyncio.to_thread(operator_search.mandate_owner, ctx, credential_id)
    return await retry_issuance(ctx, actor, org_id, credential_id, why, request_id)


# --- a code that could not be delivered -------------------------------------------------------


def check_subject_id(subject_id: str) -> None:
    if not SUBJECT_RE.fullmatch(subject_id):
        raise Invalid(f"subject {quote_input(subject_id)} is not a subject id (a lower-case UUID)")


async def retry_code(
    ctx: Context, actor: Actor, org_id: str, request_id: str, subject_id: str, reason: str
) -> SendOtpResult:
    """Send a fresh code to a subject whose last code could not be delivered (see the module).
    ``Refused`` (``nothing_undelivered``) when their last code was delivered, as for any closed
    request or a subject who decided everything; ``NotFound`` for none of the organization's."""
    why = checked_reason(reason)
    requests.check_request_id(request_id)
    check_subject_id(subject_id)
    await requests.get(ctx, org_id, request_id)
    asked = ResendOtpInput(subject_id=subject_id, actor=str(actor), reason=why)
    return await requests.workflow_update(
        ctx, request_id, "retry_code", asked, SendOtpResult, requests.CODE_UNCONFIRMED
    )


async def operator_retry_code(
    ctx: Context, actor: Actor, request_id: str, subject_id: str, reason: str
) -> SendOtpResult:
    """``retry_code`` from the operators' area or the command line: any organization's request."""
    require_operator(actor)
    why = checked_reason(reason)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    return await retry_code(ctx, actor, org_id, request_id, subject_id, why)


# --- an identity check that errored at the provider --------------------------------------------


async def restart_identity(
    ctx: Context, actor: Actor, org_id: str, request_id: str, subject_id: str, reason: str
) -> RestartIdentityResult:
    """Close the subject's identity checks the provider never reported, so that a fresh one can
    start (see the module). ``NotFound`` for none of the organization's or no subject of the
    request; ``Conflict`` when no check waits for the provider; ``Refused`` when the workflow
    says no (the request closed, an identity result is recorded: a failed check stays failed)."""
    why = checked_reason(reason)
    requests.check_request_id(request_id)
    check_subject_id(subject_id)
    bundle = await requests.get(ctx, org_id, request_id)
    if subject_id not in {s.id for _, s in bundle.subjects}:
        raise NotFound(f"Subject {subject_id} not found in request {request_id}")
    if not await run_db(ctx.engine, store.errored_checks, ctx.engine, request_id, subject_id):
        raise Conflict(
            "No identity check of the subject waits for the provider: there is nothing errored to "
            "start again (a failed check stays failed)"
        )
    asked = RestartIdentityInput(subject_id=subject_id, actor=str(actor), reason=why)
    unconfirmed = "The restart was not confirmed yet; retry shortly"
    return await requests.workflow_update(
        ctx, request_id, "restart_identity", asked, RestartIdentityResult, unconfirmed
    )


async def operator_restart_identity(
    ctx: Context, actor: Actor, request_id: str, subject_id: str, reason: str
) -> RestartIdentityResult:
    """``restart_identity`` from the operators' area or the command line: any organization's."""
    require_operator(actor)
    why = checked_reason(reason)
    org_id = await asyncio.to_thread(operator_search.request_owner, ctx, request_id)
    return await restart_identity(ctx, actor, org_id, request_id, subject_id, why)
