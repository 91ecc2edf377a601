"""Reporting identity results to the request workflow: a provider's check (``complete_check``)
and the organization's own check (``report_organization_check``)."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import Engine
from temporalio.client import Client

from core.kinds import IdentitySource, IdentityStatus
from orchestration.updates import Refused, Unavailable, run_update
from store import kyc as kyc_store
from store.db import run_db, utcnow
from store.tables import KycCheck
from workflows.messages import IdentityInput, IdentityResult

log = logging.getLogger("mandatum.api.kyc")


async def complete_check(
    engine: Engine, temporal: Client, check_id: str, success: bool, message: str | None
) -> KycCheck:
    """Store a platform check's result (the first one wins) and tell the request's workflow. A
    refusal (the request ended, the subject already has a result) leaves the check stored."""
    check = await run_db(engine, kyc_store.complete_check, engine, check_id, success, message, utcnow())
    if check.status not in (IdentityStatus.VERIFIED, IdentityStatus.FAILED):
        return check  # closed by support as errored (issue 32): its late report is not a result
    await _give(
        temporal,
        check.request_id,
        IdentityInput(
            subject_id=check.subject_id,
            success=check.status == IdentityStatus.VERIFIED,
            source=IdentitySource.PLATFORM,
            message=check.message,
            check_id=check.id,
        ),
    )
    return check


async def _give(temporal: Client, request_id: str, identity: IdentityInput) -> bool:
    """Hand an identity result to the request's workflow; whether it took it. A refusal (the
    request ended, the subject already has a result) or no answer in time is logged: the page shows
    where the subject stands, which an update still in flight may yet reach."""
    try:
        await run_update(temporal, request_id, "record_identity", identity, IdentityResult)
    except Refused as exc:
        log.info(
            "identity result (%s) of %s not applied to request %s: %s",
            identity.source,
            identity.subject_id,
            request_id,
            exc.kind,
        )
        return False
    except Unavailable:
        log.warning(
            "identity result (%s) of %s not confirmed by request %s in time",
            identity.source,
            identity.subject_id,
            request_id,
        )
        return False
    return True


async def report_organization_check(
    engine: Engine, temporal: Client, org_id: str, subject_id: str, success: bool, message: str | None
) -> list[str]:
    """The organization's own check of its subject: stored on the subject, then given to each open
    ORGANIZATION_KYC request waiting for it; the ids of the requests that took it."""
    request_ids = await asyncio.to_thread(
        kyc_store.report_organization_check, engine, org_id, subject_id, success
    )
    identity = IdentityInput(
        subject_id=subject_id, success=success, source=IdentitySource.ORGANIZATION, message=message
    )
    return [request_id for request_id in request_ids if await _give(temporal, request_id, identity)]
