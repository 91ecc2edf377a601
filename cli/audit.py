"""``mandatum audit``: check the tamper-evident audit trail (store.audit)."""

from __future__ import annotations

from typing import Annotated

import typer

from cli.common import JsonOpt, command_context, emit, operator
from services import audit

audit_app = typer.Typer(help="The audit trail.", no_args_is_help=True)


@audit_app.command("verify")
def audit_verify(
    org: Annotated[str | None, typer.Option("--org", help="Only this organization's chain.")] = None,
    as_json: JsonOpt = False,
) -> None:
    """Walk each organization's chain: every seq, prevHash, hash and signature, and the chain's
    end. Names the first broken record and exits 1 when a chain does not check."""
    checks = audit.verify_chains(command_context(), operator(), org)
    broken = [c.broken for c in checks if c.broken is not None]
    if as_json:
        emit(
            {
                "ok": not broken,
                "chains": [
                    {
                        "organizationId": c.organization_id,
                        "records": c.records,
                        "broken": None
                        if c.broken is None
                        else {
                            "recordId": c.broken.record_id,
                            "seq": c.broken.seq,
                            "problem": c.broken.problem,
                        },
                    }
                    for c in checks
                ],
            },
            True,
            "",
        )
    else:
        for check in checks:
            state = "ok" if check.broken is None else f"BROKEN: {check.broken}"
            typer.echo(f"organization {check.organization_id}: {check.records} records checked, {state}")
        if not checks:
            typer.echo("no audit records" + (f" for organization {org}" if org else ""))
    if broken:
        raise typer.Exit(1)
