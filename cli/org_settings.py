"""``mandatum org`` settings beyond the request rate: the lifetime of the organization's VPs."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import context, fail
from store import presentations
from store.orgs import NotFound


def org_set_presentation_minutes(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    minutes: Annotated[int, typer.Option(
        "--minutes", help=f"VP lifetime in minutes ({presentations.MIN_MINUTES} to "
                          f"{presentations.MAX_MINUTES}; default 5).")],
) -> None:
    """Set how long the presentations (VPs) of the organization's mandates stay valid."""
    _, engine, _ = context()
    try:
        presentations.set_presentation_minutes(engine, org, minutes)
    except (NotFound, ValueError) as exc:
        fail(str(exc))
    typer.echo(f"presentations of organization {org} are valid for {minutes} minutes")


def register_org_settings(org_app: typer.Typer) -> None:
    org_app.command("set-presentation-minutes")(org_set_presentation_minutes)
