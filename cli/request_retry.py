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
    help="Retry what failed in a request: issue a FAILED credential again.",
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
