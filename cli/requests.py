"""``mandatum request``: support from a shell. Look a request up (``show``, ``find``) and take the
dashboard's support actions on it (``cancel``, ``resend`` a code, a subject's ``link``).

Each calls the function the dashboard calls (``services.requests``) with the operator running the
command as actor, for the organization that holds the request (``services.operator_search``); each action
requires ``--reason``, recorded in the audit record it writes. ``cancel`` and ``resend`` go through
the request's workflow: Temporal is connected first, so when it does not answer nothing is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Annotated, Any, TypeVar

import typer

from cli.common import (
    JsonOpt,
    ReasonOpt,
    command_context,
    emit,
    fail,
    finish,
    operator,
    reason_of,
    with_temporal,
)
from cli.request_retry import retry_app
from cli.request_view import detail_data, print_detail
from services.context import Context
from services.errors import ServiceError

T = TypeVar("T")
request_app = typer.Typer(
    help="Credential requests: show and find one; cancel, send a fresh code, hand out a subject's link.",
    no_args_is_help=True,
)
request_app.add_typer(retry_app, name="retry")  # issue 32: support's retries (cli/request_retry.py)
RequestArg = Annotated[str, typer.Argument(help="The request id (24 lower-case hexadecimal characters).")]
SubjectOpt = Annotated[
    str, typer.Option("--subject", help="The subject's id (as `request show` lists it) or DID.")
]


def _refusing(work: Coroutine[Any, Any, T]) -> T:
    """Run ``work`` (no Temporal needed); a refusal is one line and exit 1."""
    try:
        return asyncio.run(work)
    except ServiceError as exc:
        fail(str(exc))


def _owner(ctx: Context, request_id: str) -> str:
    from services import operator_search

    try:
        return operator_search.request_owner(ctx, request_id)
    except ServiceError as exc:
        fail(str(exc))


def _subject(raw: str) -> str:
    """The subject id ``--subject`` names: the id itself, or the one ending a subject DID."""
    from services import operator_search

    return operator_search.subject_named(raw)


@request_app.command("show")
def request_show(request_id: RequestArg, as_json: JsonOpt = False) -> None:
    """A request as the dashboard shows it.

    Its subjects' progress (never a code or a link), credentials, decisions, webhook events and
    audit records."""
    from services import requests

    ctx = command_context()
    org_id = _owner(ctx, request_id)
    data = detail_data(_refusing(requests.detail(ctx, org_id, request_id)), ctx.settings.public_url)
    if as_json:
        emit(data, True, "")
    else:
        print_detail(data)


@request_app.command("find")
def request_find(
    query: Annotated[
        str,
        typer.Argument(
            help="A request id, mandate URN, webhook event id, internalId or a subject's contact."
        ),
    ],
    org: Annotated[
        str | None,
        typer.Option(
            "--org",
            help="Organization id: look only in this organization (without it, every organization "
            "is searched, as in the operators' area).",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """The requests a key names: by id or URN, then by internalId and contact (newest first), in
    every organization unless --org names one."""
    from services import operator_search, operators

    ctx = command_context()
    matches: list[tuple[Any, str, str | None]]
    if org is None:  # the operators' search: an internalId or contact in every organization
        found = _refusing(operators.find(ctx, operator(), query))
        matches = [(f.bundle, f.matched_by, f.organization) for f in found]
    else:
        named = _refusing(operator_search.find_requests(ctx, query, org))
        matches = [(m.bundle, m.matched_by, None) for m in named]
    rows = [
        {
            "requestId": bundle.request.id,
            "organizationId": bundle.request.organization_id,
            "status": bundle.request.status,
            "createdAt": bundle.request.created_at.isoformat(),
            "internalId": bundle.request.internal_id,
            "name": bundle.request.name,
            "matchedBy": matched_by,
            **({"organization": organization} if organization is not None else {}),
        }
        for bundle, matched_by, organization in matches
    ]
    if as_json:
        emit({"requests": rows}, True, "")
        return
    if not rows:
        typer.echo("no request matches")
    for r in rows:
        typer.echo(
            f"{r['requestId']}  {r['status']:<9}  org {r['organizationId']}  {r['createdAt']}"
            f"  by {r['matchedBy']}  {r['internalId'] or '-'}  {r['name'] or ''}".rstrip()
        )


@request_app.command("cancel")
def request_cancel(request_id: RequestArg, reason: ReasonOpt = None, as_json: JsonOpt = False) -> None:
    """Cancel a request no subject has decided on yet.

    MANDATE_CANCELED names you, with the reason."""
    from services import requests

    why = reason_of(reason)
    ctx = command_context()
    org_id = _owner(ctx, request_id)

    async def cancel(ctx: Context) -> dict[str, object]:
        await requests.cancel(ctx, operator(), org_id, request_id, why)
        req = (await requests.get(ctx, org_id, request_id)).request
        return {
            "requestId": req.id,
            "status": req.status,
            "canceledAt": req.canceled_at and req.canceled_at.isoformat(),
            "canceledBy": req.canceled_by,
        }

    emit(with_temporal(ctx, cancel, f"cancel request {request_id}"), as_json, "Request canceled.")
    finish()


@request_app.command("resend")
def request_resend(
    request_id: RequestArg, subject: SubjectOpt, reason: ReasonOpt = None, as_json: JsonOpt = False
) -> None:
    """Send a subject a fresh code.

    At most 5 codes, a minute apart (CONTRACT 4); OTP_RESENT names you, with the reason."""
    from services import requests

    why = reason_of(reason)
    ctx = command_context()
    org_id, subject_id = _owner(ctx, request_id), _subject(subject)

    async def resend(ctx: Context) -> dict[str, object]:
        sent = await requests.resend_code(ctx, operator(), org_id, request_id, subject_id, why)
        return {
            "requestId": request_id,
            "subjectId": subject_id,
            "channel": sent.channel,
            "delivered": sent.delivered,
            "error": sent.error_message,
            "expiresAt": sent.expires_at and sent.expires_at.isoformat(),
        }

    sent = with_temporal(ctx, resend, f"send subject {subject_id} a fresh code")
    title = "A fresh code is on its way." if sent["delivered"] else "The code was NOT delivered."
    emit({k: v for k, v in sent.items() if v is not None}, as_json, title)
    finish()


@request_app.command("link")
def request_link(
    request_id: RequestArg, subject: SubjectOpt, reason: ReasonOpt = None, as_json: JsonOpt = False
) -> None:
    """Print a subject's approval link to hand out.

    SUBJECT_LINK_SHOWN names you, with the reason; only an open request's link opens anything."""
    from services import requests

    why = reason_of(reason)
    ctx = command_context()
    org_id, subject_id = _owner(ctx, request_id), _subject(subject)
    link = _refusing(requests.hand_out_link(ctx, operator(), org_id, request_id, subject_id, why))
    if as_json:
        emit({"requestId": request_id, "subjectId": subject_id, "url": link["url"]}, True, "")
        return
    typer.echo(f"Approval link of subject {subject_id} (recorded as shown to {operator()}):")
    typer.echo(link["url"])
