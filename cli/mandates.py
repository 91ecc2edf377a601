"""``mandatum mandate``: revoking a mandate from a shell, as the dashboard does (``services.mandates``
with the operator running the command as actor, for the organization that holds it)."""

from __future__ import annotations

import asyncio
from typing import Annotated

import typer

from cli.common import JsonOpt, ReasonOpt, command_context, emit, fail, operator, reason_of
from services.errors import ServiceError

mandate_app = typer.Typer(help="Mandates: revoke one.", no_args_is_help=True)


@mandate_app.command("revoke")
def mandate_revoke(
    urn: Annotated[str, typer.Argument(help="The mandate URN (urn:via:credential:…) or credential id.")],
    reason: ReasonOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Revoke an ACTIVE mandate (final).

    Its receipt, the REVOKE item of its document form and MANDATE_REVOKED naming you, with the
    reason (in the receipt too)."""
    from services import mandates, operator_search  # with the signing code: loaded only here

    why = reason_of(reason)
    ctx = command_context()
    try:
        org_id = operator_search.mandate_owner(ctx, urn)
        revoked = asyncio.run(mandates.revoke(ctx, operator(), org_id, urn, why))
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {
            "mandateId": revoked.credential_id,
            "organizationId": org_id,
            "revokedAt": revoked.revoked_at.isoformat(),
            "reason": why,
        },
        as_json,
        "Mandate revoked.",
    )
