"""Reporting identity results to the request workflow: a provider's check (``complete_check``)
and the organization's own check (``report_organization_check``)."""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import Engine
from temporalio.client import Client

from api.journey import Refused, Unavailable, run_update
from store import kyc as kyc_store
from store.db import run_db, utcnow
from store.tables import KycCheck
from workflows.messages import IdentityInput, IdentityResult

log = logging.getLogger("mandatum.api.kyc")


async def complete_check(engine: Engine, temporal: Client, check_id: str, success: bool,
                         message: str | None) -> KycCheck:
    """Store a platform check's result (the first one wins) and tell the request's workflow. A
    refusal (the request ended, the subject already has a result) leaves the check stored."""
    check = await run_db(engine, kyc_store.complete_check, engine, check_id, success, message, utcnow())
    try:
        await run_update(temporal, check.request_id, "record_identity", IdentityInput(
            subject_id=check.subject_id, success=check.status == kyc_store.VERIFIED,
            source=kyc_store.PLATFORM, message=check.message, check_id=check.id), IdentityResult)
    except Refused as exc:
        log.info("identity check %s not applied to request %s: %s", check.id, check.request_id, exc.kind)
    except Unavailable:  # the page then shows where the subject stands, which the update may reach
        log.warning("identity check %s not confirmed by request %s in time", check.id, check.request_id)
    return check


async def report_organization_check(engine: Engine, temporal: Client, org_id: str, subject_id: str,
                                    success: bool, message: str | None) -> list[str]:
    """The organization's own check of its subject: stored on the subject, then given to each open
    ORGANIZATION_KYC request waiting for it; the ids of the requests that took it."""
    request_ids = await asyncio.to_thread(kyc_store.report_organization_check, engine, org_id, subject_id,
                                          success)
    applied: list[str] = []
    for request_id in request_ids:
        try:
            await run_update(temporal, request_id, "record_identity", IdentityInput(
                subject_id=subject_id, success=success, source=kyc_store.ORGANIZATION, message=message),
                IdentityResult)
        except Refused as exc:
            log.info("organization check of %s not applied to request %s: %s", subject_id, request_id,
                     exc.kind)
            continue
        except Unavailable:
            log.warning("organization check of %s not confirmed by request %s in time", subject_id,
                        request_id)
            continue
        applied.append(request_id)
    return applied
