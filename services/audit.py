"""The audit trail: an organization's records (``GET /activity``) and checking every chain
(``mandatum audit verify``). Reading changes nothing, so only the check takes an actor (who asked)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from core.actors import Actor
from services.context import Context
from store import audit_queries
from store.audit import ChainCheck
from store.tables import AuditRecord


async def activity(
    ctx: Context, org_id: str, where: audit_queries.ActivityFilter, page_index: int, page_size: int
) -> tuple[Sequence[AuditRecord], int]:
    """A page of the organization's records, newest first, and how many pages there are."""
    return await asyncio.to_thread(
        audit_queries.activity_page, ctx.engine, org_id, where, page_index, page_size
    )


def verify_chains(ctx: Context, actor: Actor, org_id: str | None = None) -> list[ChainCheck]:
    """Walk the organization's chain (or every organization's): seq, prevHash, hash, signature."""
    return audit_queries.verify_chains(ctx.engine, ctx.settings, org_id)
