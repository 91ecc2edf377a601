"""The ``mandatum`` command: organizations, API keys, signing keys, actions, the database schema,
operators, an organization's dashboard members, and support from a shell (requests, webhook
events, mandates)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Annotated

import typer

from cli.actions import action_app
from cli.approvals import approval_app, workflow_app
from cli.audit import audit_app
from cli.common import JsonOpt, command_context, echo, emit, fail, operator
from cli.mandates import mandate_app
from cli.members import member_app
from cli.operators import operator_app
from cli.org_settings import register_org_settings
from cli.requests import request_app
from cli.webhooks import webhook_app
from core.kinds import MemberRole
from core.settings import get_settings
from services import orgs as organizations
from services.context import Context
from services.errors import ServiceError
from services.setup import has_table, keep_files_private, migrate
from trust.did import key_id, web_organization_did, web_service_did
from wire.dates import parse_iso

app = typer.Typer(help="Administer a Mandatum installation.", no_args_is_help=True)
org_app = typer.Typer(help="Organizations.", no_args_is_help=True)
key_app = typer.Typer(help="API keys and their signature secrets.", no_args_is_help=True)
db_app = typer.Typer(help="Database schema.", no_args_is_help=True)
signing_app = typer.Typer(
    help="Ed25519 signing keys: the service's (issuer) and organizations' (DID documents).",
    no_args_is_help=True,
)
app.add_typer(org_app, name="org")
app.add_typer(key_app, name="key")
app.add_typer(db_app, name="db")
app.add_typer(signing_app, name="keys")
app.add_typer(action_app, name="action")
app.add_typer(approval_app, name="approval")
app.add_typer(workflow_app, name="workflow")
app.add_typer(webhook_app, name="webhook")
app.add_typer(audit_app, name="audit")
app.add_typer(request_app, name="request")
app.add_typer(mandate_app, name="mandate")
app.add_typer(operator_app, name="operator")
# the command's first name, kept for scripts written before issue 33 (not listed in --help)
app.add_typer(operator_app, name="staff", hidden=True)
app.add_typer(member_app, name="member")
register_org_settings(org_app)


@app.callback()
def _private_files() -> None:
    """Whatever a command writes (a SQLite database, its WAL, the development master key) is the
    owner's only."""
    keep_files_private()


@db_app.command("upgrade")
def db_upgrade() -> None:
    """Apply every pending schema migration."""
    migrate(get_settings().sqlalchemy_url)
    typer.echo("database schema is up to date")


@org_app.command("create")
def org_create(
    name: Annotated[str, typer.Option("--name", help="Display name of the organization.")],
    rate: Annotated[
        int | None,
        typer.Option(
            "--request-rate",
            min=1,
            help="Requests per minute (default: MANDATUM_DEFAULT_REQUEST_RATE_PER_MINUTE, 60).",
        ),
    ] = None,
    owner_email: Annotated[
        str | None,
        typer.Option(
            "--owner-email",
            help="Invite the dashboard owner: prints a one-time link to set their password.",
        ),
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """Create an organization with its first API key (the secret is shown only now)."""
    ctx = command_context()
    settings = ctx.settings
    if owner_email is not None:
        from services import members  # with the password hasher: loaded only here

        try:
            members.check_new_email(ctx, owner_email)
        except ServiceError as exc:
            fail(f"--owner-email: {exc}")
    try:
        org, key = organizations.create_organization(ctx, operator(), name, rate)
        owner = (
            members.invite(ctx, operator(), org.id, owner_email, MemberRole.OWNER)
            if owner_email is not None
            else None
        )
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {
            "organizationId": org.id,
            "name": org.name,
            "did": web_organization_did(settings.public_url, org.id),
            "keyId": key.key_id,
            "apiKey": key.api_key,
            "signatureSecret": key.signature_secret,
            **({"ownerEmail": owner.member.email, "ownerSetPasswordLink": owner.link} if owner else {}),
        },
        as_json,
        "Organization created. Store the API key and secret now: they are not shown again.",
    )


@org_app.command("list")
def org_list(as_json: JsonOpt = False) -> None:
    """List organizations."""
    ctx = command_context()
    settings = ctx.settings
    rows = [
        {
            "organizationId": o.id,
            "name": o.name,
            "did": web_organization_did(settings.public_url, o.id),
            "requestRatePerMinute": o.request_rate_per_minute,
            "apiVersion": o.api_version,
        }
        for o in organizations.list_organizations(ctx)
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    for r in [] if as_json else rows:
        echo(f"{r['organizationId']}  {r['name']}  {r['did']}")


@org_app.command("set-rate")
def org_set_rate(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    rate: Annotated[int, typer.Option("--request-rate", help="Requests per minute.")],
) -> None:
    """Set how many requests per minute the organization may create."""
    try:
        organizations.set_request_rate(command_context(), operator(), org, rate)
    except ServiceError as exc:
        fail(str(exc))
    typer.echo(f"organization {org} may create {rate} requests per minute")


@key_app.command("create")
def key_create(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    expires_at: Annotated[
        str | None,
        typer.Option(
            "--expires-at", help="ISO 8601 date or date-time, e.g. 2027-01-31T12:00:00Z (no offset: UTC)."
        ),
    ] = None,
    name: Annotated[
        str | None,
        typer.Option("--name", help="What the key is for (1 to 80 characters), shown in the dashboard."),
    ] = None,
    description: Annotated[
        str, typer.Option("--description", help="A line about the key (up to 500 characters).")
    ] = "",
    as_json: JsonOpt = False,
) -> None:
    """Add an API key to an organization (unnamed without --name)."""
    ctx = command_context()
    try:
        expires = parse_iso("--expires-at", expires_at) if expires_at is not None else None
    except ValueError as exc:
        fail(str(exc))
    if expires is not None and expires <= datetime.now(UTC):
        fail("--expires-at must be in the future")
    try:
        key = organizations.create_key(ctx, operator(), org, expires, name=name, description=description)
    except ServiceError as exc:
        fail(str(exc))
    emit(
        {
            "keyId": key.key_id,
            "organizationId": key.organization_id,
            "name": key.name,
            "description": key.description,
            "apiKey": key.api_key,
            "signatureSecret": key.signature_secret,
            "expiresAt": key.expires_at,
        },
        as_json,
        "API key created. Store it now: it is not shown again.",
    )


@key_app.command("rotate")
def key_rotate(key: Annotated[str, typer.Option("--key", help="Key id.")], as_json: JsonOpt = False) -> None:
    """New signature secret for a key; the old one keeps working for 24 hours."""
    ctx = command_context()
    settings = ctx.settings
    try:
        issued = organizations.rotate_key(ctx, operator(), key)
    except ServiceError as exc:
        fail(str(exc))
    hours = int(settings.rotation_grace.total_seconds() // 3600)
    emit(
        {
            "keyId": issued.key_id,
            "organizationId": issued.organization_id,
            "signatureSecret": issued.signature_secret,
            "previousSecretValidHours": hours,
        },
        as_json,
        f"Secret rotated. The previous secret stays valid for {hours} hours.",
    )


@key_app.command("revoke")
def key_revoke(key: Annotated[str, typer.Option("--key", help="Key id.")], as_json: JsonOpt = False) -> None:
    """Revoke a key at once."""
    try:
        at = organizations.revoke_key(command_context(), operator(), key)
    except ServiceError as exc:
        fail(str(exc))
    emit({"keyId": key, "revokedAt": at.isoformat()}, as_json, "API key revoked.")


@key_app.command("list")
def key_list(
    org: Annotated[str, typer.Option("--org", help="Organization id.")], as_json: JsonOpt = False
) -> None:
    """List an organization's keys (never their secrets)."""
    ctx = command_context()
    try:
        organizations.get_organization(ctx, org)
    except ServiceError as exc:
        fail(str(exc))
    rows = [
        {
            "keyId": k.id,
            "name": k.name,
            "description": k.description,
            "prefix": k.key_prefix,
            "createdAt": k.created_at.isoformat(),
            "lastUsedAt": k.last_used_at and k.last_used_at.isoformat(),
            "rotatedAt": k.rotated_at and k.rotated_at.isoformat(),
            "expiresAt": k.expires_at and k.expires_at.isoformat(),
            "revokedAt": k.revoked_at and k.revoked_at.isoformat(),
        }
        for k in organizations.list_keys(ctx, org)
    ]
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
    for r in [] if as_json else rows:
        echo(f"{r['keyId']}  {r['prefix']}…  {r['name'] or '(unnamed)'}  revoked={r['revokedAt'] or '-'}")


def _signing_context() -> Context:
    ctx = command_context()
    if not has_table(ctx.engine, "signing_key"):
        fail("the database schema is out of date: run `mandatum db upgrade` first")
    return ctx


def _rotated(rotation: organizations.Rotation, did: str, as_json: bool, who: str) -> None:
    emit(
        {
            "did": did,
            "keyId": rotation.key.verification_method,
            "publicKeyMultibase": rotation.key.public_multikey,
            "retiredKeysListed": rotation.retired_listed,
        },
        as_json,
        f"{who} key rotated: the new key signs from now on; "
        f"{rotation.retired_listed} retired key(s) stay listed in the DID document.",
    )


@signing_app.command("rotate-issuer")
def keys_rotate_issuer(as_json: JsonOpt = False) -> None:
    """Make a new service (issuer) key; the old one is retired but stays in the DID document."""
    ctx = _signing_context()
    rotation = organizations.rotate_service_signing_key(ctx, operator())
    _rotated(rotation, web_service_did(ctx.settings.public_url), as_json, "Issuer")


@signing_app.command("rotate-org")
def keys_rotate_org(
    org: Annotated[str, typer.Option("--org", help="Organization id.")], as_json: JsonOpt = False
) -> None:
    """Make a new key for an organization (its presentations); the old one stays listed."""
    ctx = _signing_context()
    try:
        rotation = organizations.rotate_organization_signing_key(ctx, operator(), org)
    except ServiceError as exc:
        fail(str(exc))
    _rotated(rotation, web_organization_did(ctx.settings.public_url, org), as_json, "Organization")


@signing_app.command("list")
def keys_list(
    org: Annotated[
        str | None, typer.Option("--org", help="An organization's keys instead of the service's.")
    ] = None,
    as_json: JsonOpt = False,
) -> None:
    """List signing keys (public parts only), the active one first."""
    ctx = _signing_context()
    settings = ctx.settings
    if org is not None:
        try:
            organizations.get_organization(ctx, org)
        except ServiceError as exc:
            fail(str(exc))
    did = web_organization_did(settings.public_url, org) if org else web_service_did(settings.public_url)
    rows = [
        {
            "keyId": key_id(did, k.public_multikey),
            "publicKeyMultibase": k.public_multikey,
            "status": k.status,
            "createdAt": k.created_at.isoformat(),
            "retiredAt": k.retired_at and k.retired_at.isoformat(),
        }
        for k in organizations.signing_keys(ctx, org)
    ]
    if as_json:
        typer.echo(json.dumps({"did": did, "keys": rows}, indent=2))
        return
    typer.echo(did if rows else f"{did}: no key yet (one is made on first use)")
    for r in rows:
        typer.echo(f"  {r['status']:<7}  {r['publicKeyMultibase']}  created {r['createdAt']}")


if __name__ == "__main__":
    app()
