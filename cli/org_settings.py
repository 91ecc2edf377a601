"""``mandatum org`` settings beyond the request rate: the lifetime of the organization's VPs, the
origins allowed to embed its approval page, whether every member needs a second factor, and
whether the subject's portal shows its mandates."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import command_context, fail, operator
from core.ids import is_object_id
from services import orgs as organizations
from services.errors import ServiceError


def org_set_presentation_minutes(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    minutes: Annotated[
        int,
        typer.Option(
            "--minutes",
            help=f"VP lifetime in minutes ({organizations.MIN_MINUTES} to "
            f"{organizations.MAX_MINUTES}; default 5).",
        ),
    ],
) -> None:
    """Set how long the presentations (VPs) of the organization's mandates stay valid."""
    try:
        organizations.set_presentation_minutes(command_context(), operator(), org, minutes)
    except ServiceError as exc:
        fail(str(exc))
    typer.echo(f"presentations of organization {org} are valid for {minutes} minutes")


def org_set_frame_origins(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    origins: Annotated[
        list[str] | None,
        typer.Argument(help="HTTPS origins (https://app.example.com), at most 10; none clears the list."),
    ] = None,
) -> None:
    """Set the origins whose pages may embed the organization's approval page in an iframe."""
    try:
        saved = organizations.set_frame_origins(command_context(), operator(), org, origins or [])
    except ServiceError as exc:
        fail(str(exc))
    typer.echo(f"organization {org} may be embedded by: {' '.join(saved) or '(no origin)'}")


def org_set_second_factor(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    required: Annotated[
        bool,
        typer.Option(
            "--required/--optional",
            help="Every member must have a second factor (one without it can only set it up after "
            "their password), or it is each member's choice.",
        ),
    ],
) -> None:
    """Require a second factor of every member of the organization, or make it optional again."""
    if not is_object_id(org):
        fail("--org: an id is 24 lowercase hexadecimal characters")
    try:
        organizations.set_require_second_factor(command_context(), operator(), org, required)
    except ServiceError as exc:
        fail(str(exc))
    said = (
        "requires a second factor of every member" if required else "leaves the second factor to each member"
    )
    typer.echo(f"organization {org} {said}")


def org_set_portal(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    enabled: Annotated[
        bool,
        typer.Option(
            "--on/--off",
            help="The subject's portal (/portal) lists the organization's mandates and lets their "
            "subjects revoke them (the default), or shows none of them.",
        ),
    ],
) -> None:
    """Turn the subject's portal on or off for the organization's mandates."""
    if not is_object_id(org):
        fail("--org: an id is 24 lowercase hexadecimal characters")
    try:
        organizations.set_portal_enabled(command_context(), operator(), org, enabled)
    except ServiceError as exc:
        fail(str(exc))
    said = "shows its mandates in the subject's portal" if enabled else "keeps its mandates out of the portal"
    typer.echo(f"organization {org} {said}")


def register_org_settings(org_app: typer.Typer) -> None:
    org_app.command("set-presentation-minutes")(org_set_presentation_minutes)
    org_app.command("set-frame-origins")(org_set_frame_origins)
    org_app.command("set-second-factor")(org_set_second_factor)
    org_app.command("set-portal")(org_set_portal)
