"""The DID documents this service publishes: its own (the issuer's keys), each organization's (the
keys of its presentations) and each subject's (no keys). Read fresh from the database by the
public routes, so a key rotated by another process is published at once; a signing key is made on
first use. Each runs on a thread of its own (``store.keys``)."""

from __future__ import annotations

import asyncio
from typing import Any

from services.context import Context
from store import keys


async def service_document(ctx: Context) -> dict[str, Any]:
    """The issuer's document (its first key made if there is none)."""
    return await asyncio.to_thread(keys.service_did_document, ctx.engine, ctx.cipher, ctx.settings)


async def organization_document(ctx: Context, org_id: str) -> dict[str, Any] | None:
    """An organization's document (its key made on first use), None for an unknown organization."""
    return await asyncio.to_thread(
        keys.organization_did_document, ctx.engine, ctx.cipher, ctx.settings, org_id
    )


async def document_of(ctx: Context, did: str, *, fresh: bool = False) -> dict[str, Any] | None:
    """The document of one of this service's DIDs (service, organization, subject), None when it
    is not one of ours or does not exist; ``fresh`` reads the database past the per-process cache."""
    return await asyncio.to_thread(keys.did_document_for, ctx.engine, ctx.settings, did, fresh)
