"""``mandatum request retry``: support's retries of a request (issue 32), from a shell.

Each calls the function the dashboard calls (``services.retries``) with the operator running the
command as actor and the ``--reason`` it requires, recorded in the audit record the retry writes.
Temporal is connected first, so when it does not answer nothing is done.
"""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import JsonOpt, ReasonOpt, command_context, emit, finish, operator, reason_of, with_temporal
from services.context import Context

retry_app = typer.Typer(
    help="Retry what failed in a request: issue a FAILED credential again, send a code that could "
    "not be delivered again, start an identity check that errored at the provider again.",
    no_args_is_help=True,
)

# --- retry issuance -----------------------------------------------------------------------------

CredentialArg = Annotated[
    str, typer.Argument(help="The credential id (24 lower-case hexadecimal characters).")
]


@retry_app.command("issuance")
def retry_issuance(credential_id: CredentialArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Issue again a credential whose issuance failed for good (status FAILED).

    From the same decisions and evidence, by the workflow credential-retry:<credentialId>;
    MANDATE_ISSUANCE_RETRIED names you, with the reason, and the integrator gets a credential event.
    Asked again while it runs or after it succeeded, it answers with that retry."""
    from services import retries

    why = reason_of(reason)
    ctx = command_context()

    async def retry(ctx: Context) -> dict[str, object]:
        done = await retries.operator_retry_issuance(ctx, operator(), credential_id, why)
        return {
            "credentialId": done.credential_id,
            "requestId": done.request_id,
            "workflowId": done.workflow_id,
            "state": done.state,
            "mandateId": done.mandate_id,
            "eventId": done.event_id,
        }

    done = with_temporal(ctx, retry, f"retry the issuance of credential {credential_id}")
    title = "Credential issued." if done["state"] == "issued" else "The retry is under way."
    emit({k: v for k, v in done.items() if v is not None}, as_json, title)
    finish()


# --- retry code ---------------------------------------------------------------------------------

RequestArg = Annotated[str, typer.Argument(help="The request id (24 lower-case hexadecimal characters).")]
SubjectOpt = Annotated[
    str, typer.Option("--subject", help="The subject's id (as `request show` lists it) or DID.")
]


def _subject_named(raw: str) -> str:
    from services import operator_search

    return operator_search.subject_named(raw)


@retry_app.command("code")
def retry_code(
    request_id: RequestArg, subject: SubjectOpt, reason: ReasonOpt = None, as_json: JsonOpt = False
) -> None:
    """Send a fresh code to a subject whose last code could not be delivered.

    Once the channel works: one more code per undelivered send, whatever the subject's own limits
    (5 codes, a minute apart); OTP_RESENT names you, with the reason."""
    from services import retries

    why = reason_of(reason)
    ctx = command_context()
    subject_id = _subject_named(subject)

    async def retry(ctx: Context) -> dict[str, object]:
        sent = await retries.operator_retry_code(ctx, operator(), request_id, subject_id, why)
        return {
            "requestId": request_id,
            "subjectId": subject_id,
            "channel": sent.channel,
            "delivered": sent.delivered,
            "error": sent.error_message,
        }

    sent = with_temporal(ctx, retry, f"send subject {subject_id} a code again")
    title = "A fresh code is on its way." if sent["delivered"] else "The code was NOT delivered, again."
    emit({k: v for k, v in sent.items() if v is not None}, as_json, title)
    finish()


# --- retry identity -----------------------------------------------------------------------------


@retry_app.command("identity")
def retry_identity(
    request_id: RequestArg, subject: SubjectOpt, reason: ReasonOpt = None, as_json: JsonOpt = False
) -> None:
    """Start again a subject's identity check that errored at the provider.

    The check the provider never reported is closed (ERROR) and the subject's approval page offers
    a fresh one; IDENTITY_CHECK_RESTARTED names you, with the reason. A failed check stays failed."""
    from services import retries

    why = reason_of(reason)
    ctx = command_context()
    subject_id = _subject_named(subject)

    async def retry(ctx: Context) -> dict[str, object]:
        done = await retries.operator_restart_identity(ctx, operator(), request_id, subject_id, why)
        return {"requestId": request_id, "subjectId": subject_id, "closedChecks": done.checks}

    done = with_temporal(ctx, retry, f"start the identity check of subject {subject_id} again")
    emit(done, as_json, "The errored check is closed: the subject's page offers a fresh one.")
    finish()


# --- send again ---------------------------------------------------------------------------------


@retry_app.command("send-again")
def retry_send_again(
    request_id: RequestArg,
    reason: ReasonOpt = None,
    newest: Annotated[
        bool, typer.Option("--newest", help="Pin each action's newest published version (else the same).")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Send an expired, canceled or rejected request again as a new request.

    The same subjects, credentials and options, with its own workflow and a new code and link;
    both requests name each other (resentFrom, resentAs), REQUEST_RESENT names you with the reason,
    and the integrator gets a request.resent event. Once per request."""
    from services import request_resend

    why = reason_of(reason)
    ctx = command_context()

    async def send(ctx: Context) -> dict[str, object]:
        made = await request_resend.send_again_as_operator(ctx, operator(), request_id, why, newest=newest)
        return {"requestId": made.request.id, "resentFrom": request_id, "status": made.request.status}

    done = with_temporal(ctx, send, f"send request {request_id} again")
    emit(done, as_json, f"Sent again as request {done['requestId']}.")
    finish()
