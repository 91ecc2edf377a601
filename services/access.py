"""Who is calling: an API key resolved to its organization, a signature used once, and the
organization's API version pinned on its first call (CONTRACT 1 and 10). The signature middleware
calls these on every signed request, so each is one short database call; ``record_key_use`` is the
exception, called off the request path for a batch of keys (``api.key_use``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from core.actors import Actor
from services.context import Context
from store import guards, orgs
from store.guards import SignatureUse as SignatureUse  # a signature to remember against replays
from store.orgs import ActiveKey as ActiveKey  # a live key as the signature middleware reads it


def resolve_key(ctx: Context, api_key: str) -> orgs.ActiveKey | None:
    """The live key (its organization, accepted secrets, pinned version, rate), None for an unknown,
    expired or revoked one."""
    return orgs.resolve_api_key(ctx.engine, ctx.cipher, api_key, ctx.settings.rotation_grace)


SIGNATURE_USED = "Signature already used"


def use_signature(ctx: Context, use: guards.SignatureUse) -> bool:
    """Record the (key, signature) pair for ``use.keep``; False when it was used before (a read may
    repeat a read's signature)."""
    return guards.remember_signature(ctx.engine, use)


def pin_api_version(ctx: Context, actor: Actor, org_id: str, version: str) -> None:
    """The organization's first authenticated call pins it to ``version`` (CONTRACT 10)."""
    orgs.pin_api_version(ctx.engine, org_id, version)


def record_key_use(ctx: Context, uses: Mapping[str, datetime]) -> None:
    """Move each key's "last used" forward to its time in ``uses`` (key id -> time); never back."""
    orgs.record_key_use(ctx.engine, uses)
