"""Presentations and verification (CONTRACT 4 and 5): issue a VP of a mandate, verify a VP.

Both endpoints answer from the database and the trust core only (no Temporal call); the
synchronous work of each runs in one worker thread. See ``services.presentations`` for what the
presentation endpoint refuses and ``services.verification`` for the order of the verify checks.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from api.deps import CallerDep, ContextDep
from api.errors import ApiError, error_body
from api.responses import answer, errors, path_param
from api.versions import VersionedRoute
from core.ids import colons_decoded
from services import presentations, verification
from services.context import run_blocking
from wire import patterns
from wire.presentations import (
    PresentationDenied,
    PresentationEnvelope,
    PresentationIn,
    VerifyAllowed,
    VerifyDenied,
    VerifyIn,
)

router = APIRouter(tags=["credentials"], route_class=VersionedRoute)
PRESENTATION_ERRORS = {
    **answer(
        400,
        "Invalid input (a mandateId that is no mandate URN, the body), a DOCUMENT credential, or a "
        "revoked mandate (`reason: credential_revoked`)",
        PresentationDenied,
    ),
    **errors(401, 413),
    **answer(403, "The mandate's own organization is not among its authorizedDIDs"),
    **answer(404, "No issued mandate of the caller's organization, or listing it, has this id"),
    **answer(409, "The mandate is issued but neither ACTIVE nor REVOKED"),
}
VERIFY_ERRORS = {
    **errors(400, 401, 413),
    **answer(
        429,
        "Too many of the organization's verifications wait for an evaluation process (costly rules): "
        "retry after `Retry-After` seconds; nothing was recorded and the VP is still unused",
    ),
    **answer(503, "Rule evaluation is not available right now; nothing was recorded"),
    **answer(
        403, "Denied: `reason` says which check failed; with the evaluations and a receipt", VerifyDenied
    ),
}
MandateId = Annotated[
    str, path_param(patterns.MANDATE_URN, "The mandate URN urn:via:credential:<uuid>, percent-encoded or not")
]
_REFUSALS: list[tuple[type[presentations.PresentationRefused], int]] = [
    (presentations.MandateNotFound, 404),
    (presentations.NotAuthorized, 403),
    (presentations.NotAMandate, 400),
    (presentations.MandateRevoked, 400),
    (presentations.MandateNotActive, 409),
]


def _mandate_id(raw: str) -> str:
    """The mandate URN of the path, percent-encoded (its colons decoded once more if still encoded)
    or not."""
    value = colons_decoded(raw)
    if not presentations.CREDENTIAL_URN_RE.fullmatch(value):
        raise ApiError(400, "mandateId must be a mandate URN urn:via:credential:<uuid>")
    return value


async def _present(mandate_id: str, body: PresentationIn | None, caller: CallerDep, ctx: ContextDep) -> Any:
    try:
        issued = await run_blocking(
            ctx,
            presentations.issue_presentation,
            ctx.engine,
            ctx.cipher,
            ctx.settings,
            actor=caller.actor,
            caller_org_id=caller.organization_id,
            mandate_id=_mandate_id(mandate_id),
            target_verifier=body.targetVerifier if body is not None else None,
        )
    except presentations.PresentationRefused as exc:
        status = next(code for kind, code in _REFUSALS if isinstance(exc, kind))
        if exc.reason is not None:
            raise ApiError(status, str(exc), reason=exc.reason) from exc
        raise ApiError(status, str(exc)) from exc
    data = {"presentation": issued.presentation, "receipt": issued.receipt}
    return JSONResponse({"data": data})


@router.post(
    "/credential/{mandateId}/presentation", response_model=PresentationEnvelope, responses=PRESENTATION_ERRORS
)
async def create_presentation(
    mandateId: MandateId, caller: CallerDep, ctx: ContextDep, body: PresentationIn | None = None
) -> Any:
    """A fresh, short-lived, single-use VP of a mandate, with its `PRESENTATION_ISSUED` receipt.

    The mandate is the caller's organization's, or lists the caller's organization DID in its
    `authorizedDIDs`; another organization's mandate that does not list the caller is 404, like an
    unknown or not yet issued one (CONTRACT 2: never reveal that it exists). The mandate's own
    organization missing from its `authorizedDIDs` is 403. A DOCUMENT credential is 400, a revoked
    mandate 400 with reason `credential_revoked`, an issued mandate in another state than ACTIVE
    409. The validity window is judged by verify, not here. `targetVerifier` binds the VP to one
    verifier (`proof.domain`). The VP
    lives for the mandate organization's presentation lifetime (5 minutes unless set, 1 to 60).
    """
    return await _present(mandateId, body, caller, ctx)


@router.post("/credential/vp/{mandateId}", response_model=PresentationEnvelope, responses=PRESENTATION_ERRORS)
async def create_presentation_alias(
    mandateId: MandateId, caller: CallerDep, ctx: ContextDep, body: PresentationIn | None = None
) -> Any:
    """The same as `POST /credential/{mandateId}/presentation`."""
    return await _present(mandateId, body, caller, ctx)


@router.post("/credential/verify", response_model=VerifyAllowed, responses=VERIFY_ERRORS)
async def verify_presentation(body: VerifyIn, request: Request, caller: CallerDep, ctx: ContextDep) -> Any:
    """Decide whether the caller (the verifier) may act on a VP with these `executionParams`.

    200 `allow` or 403 `deny` with a `reason`, both with the per-rule `evaluations` and a signed
    receipt. A VP is used up by the first verification that gets past its signature checks,
    whatever it decides, made by a verifier the VP may be shown to (in the mandate's
    `authorizedDIDs` and, for a bound VP, its `proof.domain`): another verifier's attempt is
    denied and recorded, and leaves the VP to its holder. A body that is not a JSON object with a
    `presentation` object is a 400.
    """
    verdict = await verification.verify_grouped(
        ctx,
        actor=caller.actor,
        verifier_org_id=caller.organization_id,
        presentation=body.presentation,
        execution_params=body.executionParams,
        signature=caller.signature,  # recorded in the verification's own transaction
        size=len(await request.body()),  # read already: FastAPI keeps it
    )
    if verdict.reason is None:
        allowed = {
            "decision": verdict.decision,
            "credentialId": verdict.credential_id,
            "evaluations": verdict.evaluations,
            **({"limits": verdict.limits} if verdict.limits else {}),
            "receipt": verdict.receipt,
        }
        return JSONResponse(allowed)
    denied = error_body(
        403,
        verdict.message,
        decision=verdict.decision,
        reason=verdict.reason,
        credentialId=verdict.credential_id,
        evaluations=verdict.evaluations,
        **({"limits": verdict.limits} if verdict.limits else {}),
        receipt=verdict.receipt,
    )
    return JSONResponse(denied, status_code=403)
