"""Organizations, their settings and their keys: what the command line and the dashboard do, each
by a named actor.

Each change after an organization's creation is in its audit trail, naming the actor, in the
change's own transaction: ``API_KEY_CREATED`` / ``ROTATED`` / ``REVOKED`` / ``EDITED`` (the key's
id and name, never a secret) and ``ORGANIZATION_SETTINGS_CHANGED`` (the setting and its new value).
The creation itself, with its first key (unnamed), is the operator's setting-up and writes none
(the chain starts with the organization's first consequential event). A signing-key rotation
writes none yet either.
Refusals are ``services.errors``.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import TypeVar

from core.actors import Actor
from core.text import text_problem, unsafe_characters
from services.context import Context
from services.errors import Invalid, NotFound
from store import keys, orgs, presentations
from store.keys import Rotation as Rotation  # a signing key's rotation: the new key, the retired
from store.presentations import MAX_MINUTES as MAX_MINUTES  # a VP lifetime's bounds (CONTRACT 5)
from store.presentations import MIN_MINUTES as MIN_MINUTES
from store.tables import ApiKey, Organization, SigningKey
from wire import versioning

T = TypeVar("T")
MAX_KEY_NAME = 80  # the columns' lengths
MAX_KEY_DESCRIPTION = 500


def _refusing(work: Callable[[], T]) -> T:
    """Run a store operation, its refusals as service errors (their words kept)."""
    try:
        return work()
    except (orgs.NotFound, presentations.NotFound) as exc:
        raise NotFound(str(exc)) from exc
    except ValueError as exc:
        raise Invalid(str(exc)) from exc


def create_organization(
    ctx: Context, actor: Actor, name: str, rate_per_minute: int | None = None
) -> tuple[Organization, orgs.IssuedKey]:
    """A new organization with its first API key (the secret is in the result, and nowhere else).
    Its name is one line of printable text (``core.text``): the subject reads it on the approval
    page, in the message with the code and in a document's PDF."""
    problem = text_problem(name.strip())
    if problem is not None:
        raise Invalid(f"organization name {problem}")
    rate = rate_per_minute or ctx.settings.default_request_rate_per_minute
    return _refusing(lambda: orgs.create_organization(ctx.engine, ctx.cipher, name, rate))


def set_request_rate(ctx: Context, actor: Actor, org_id: str, per_minute: int) -> None:
    _refusing(lambda: orgs.set_request_rate(ctx.engine, org_id, per_minute, actor=str(actor)))


def set_presentation_minutes(ctx: Context, actor: Actor, org_id: str, minutes: int) -> None:
    """How long the organization's VPs stay valid (CONTRACT 5: 1 to 60 minutes)."""
    _refusing(lambda: presentations.set_presentation_minutes(ctx.engine, org_id, minutes, actor=str(actor)))


def set_require_second_factor(ctx: Context, actor: Actor, org_id: str, required: bool) -> None:
    """Whether every member of the organization must have a second factor (an operator's
    ``mandatum org set-second-factor``; an owner's is ``services.second_factor.set_required``)."""
    _refusing(lambda: orgs.set_require_second_factor(ctx.engine, org_id, required, actor=str(actor)))


def set_portal_enabled(ctx: Context, actor: Actor, org_id: str, enabled: bool) -> None:
    """Whether the subject's portal lists and revokes the organization's mandates (issue 32): an
    operator's ``mandatum org set-portal``, an owner's dashboard settings. Recorded as
    ``ORGANIZATION_SETTINGS_CHANGED`` (``portalEnabled``) naming ``actor``."""
    _refusing(lambda: orgs.set_portal_enabled(ctx.engine, org_id, enabled, actor=str(actor)))


def get_organization(ctx: Context, org_id: str) -> Organization:
    return _refusing(lambda: orgs.get_organization(ctx.engine, org_id))


def list_organizations(ctx: Context) -> list[Organization]:
    """Every organization of the installation (``mandatum org list``)."""
    return orgs.list_organizations(ctx.engine)


def check_frame_origins(ctx: Context, origins: list[str]) -> list[str]:
    """The origins as ``set_frame_origins`` would save them (``Invalid`` names a bad one)."""

    def checked() -> list[str]:
        local = ctx.settings.allow_loopback_http
        found = list(dict.fromkeys(orgs.check_frame_origin(o, local) for o in origins))
        if len(found) > orgs.MAX_FRAME_ORIGINS:
            raise ValueError(f"at most {orgs.MAX_FRAME_ORIGINS} origins may embed the approval page")
        return found

    return _refusing(checked)


def set_frame_origins(ctx: Context, actor: Actor, org_id: str, origins: list[str]) -> list[str]:
    """The origins allowed to embed the organization's approval page, checked; what was saved."""
    local = ctx.settings.allow_loopback_http
    return _refusing(lambda: orgs.set_frame_origins(ctx.engine, org_id, origins, local, actor=str(actor)))


def set_api_version(ctx: Context, actor: Actor, org_id: str, version: str) -> None:
    """Pin the organization to one of the offered API versions (CONTRACT 10)."""
    if version not in versioning.VERSIONS:
        raise Invalid(f"the API version is one of {', '.join(versioning.VERSIONS)}")
    _refusing(lambda: orgs.set_api_version(ctx.engine, org_id, version, actor=str(actor)))


def key_label(name: str, description: str = "") -> tuple[str, str]:
    """A key's name and description as typed, surrounding spaces dropped and checked: the name 1 to
    80 characters, the description at most 500, each one line of printable text
    (``core.text.unsafe_characters``: no control, line break or direction override, which could
    make the keys page read otherwise). ``Invalid`` lists every problem."""
    name, description = name.strip(), description.strip()
    problems = []
    if not name or len(name) > MAX_KEY_NAME:
        problems.append(f"The key's name is 1 to {MAX_KEY_NAME} characters (it has {len(name)}).")
    elif unsafe := unsafe_characters(name):
        problems.append(
            f"The key's name must be one line of printable characters: it holds {', '.join(unsafe[:5])}."
        )
    if len(description) > MAX_KEY_DESCRIPTION:
        problems.append(
            f"The description is at most {MAX_KEY_DESCRIPTION} characters (it has {len(description)})."
        )
    elif unsafe := unsafe_characters(description):
        problems.append(
            f"The description must be one line of printable characters: it holds {', '.join(unsafe[:5])}."
        )
    if problems:
        raise Invalid(problems)
    return name, description


def create_key(
    ctx: Context,
    actor: Actor,
    org_id: str,
    expires_at: datetime | None = None,
    *,
    name: str | None = None,
    description: str = "",
) -> orgs.IssuedKey:
    """Another API key of the organization. ``name`` (and ``description``) as ``key_label`` checks
    them; None leaves the key unnamed, as the organization's first key is (the command line without
    ``--name``), and then a description is refused."""
    if name is None and description.strip():
        raise Invalid("A key with a description needs a name too.")
    label = key_label(name, description) if name is not None else ("", "")
    return _refusing(
        lambda: orgs.create_key(
            ctx.engine, ctx.cipher, org_id, expires_at, actor=str(actor), name=label[0], description=label[1]
        )
    )


def describe_key(
    ctx: Context, actor: Actor, key_id: str, name: str, description: str, org_id: str | None = None
) -> bool:
    """A new name and description for the key (``key_label`` checks them), recorded as
    ``API_KEY_EDITED``; False when it had them already (nothing recorded). With ``org_id``, another
    organization's key is NotFound."""
    label = key_label(name, description)
    return _refusing(lambda: orgs.describe_key(ctx.engine, key_id, *label, actor=str(actor), org_id=org_id))


def rotate_key(ctx: Context, actor: Actor, key_id: str, org_id: str | None = None) -> orgs.IssuedKey:
    """A new signature secret; the previous one keeps working for the grace period (CONTRACT 1).
    With ``org_id`` (a member's organization), another organization's key is NotFound."""
    return _refusing(lambda: orgs.rotate_key(ctx.engine, ctx.cipher, key_id, actor=str(actor), org_id=org_id))


def revoke_key(ctx: Context, actor: Actor, key_id: str, org_id: str | None = None) -> datetime:
    """Revoke the key at once (final). With ``org_id``, another organization's key is NotFound."""
    return _refusing(lambda: orgs.revoke_key(ctx.engine, key_id, actor=str(actor), org_id=org_id))


def list_keys(ctx: Context, org_id: str) -> list[ApiKey]:
    """The organization's API keys, oldest first (never a secret: those are stored encrypted)."""
    return orgs.list_keys(ctx.engine, org_id)


def rotate_service_signing_key(ctx: Context, actor: Actor) -> keys.Rotation:
    """A new issuer key; the retired one stays listed in the DID document."""
    return keys.rotate_service_key(ctx.engine, ctx.cipher, ctx.settings)


def rotate_organization_signing_key(ctx: Context, actor: Actor, org_id: str) -> keys.Rotation:
    """A new key for the organization's presentations; the retired one stays listed."""
    return _refusing(lambda: keys.rotate_organization_key(ctx.engine, ctx.cipher, ctx.settings, org_id))


def signing_keys(ctx: Context, org_id: str | None = None) -> list[SigningKey]:
    """The service's signing keys, or an organization's (public parts only), the active one first."""
    return keys.list_signing_keys(ctx.engine, org_id or keys.SERVICE_OWNER)


IssuedKey = orgs.IssuedKey  # what a new key or rotation answers (the surfaces import no store module)
