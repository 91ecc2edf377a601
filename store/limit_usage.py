"""What the pages read of a mandate's use limits (issue 31): its bounds as a person reads them (each
limit with its ``max`` resolved for the request, its action version's ``description`` beside it,
then the request's ``maxExecutions``) and the verifications that used it or were refused for want
of room. The counting itself is ``store.limit_use``'s, in the verification's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import Engine, func, or_, select
from sqlmodel import Session, col
from sqlmodel import select as select_rows

from policy import limits
from policy.limits import Bound
from store.db import read_session
from store.tables import ActionVersion, Credential, Presentation, Verification

LIMIT_EXCEEDED = "limit_exceeded"  # the reason of a verification refused for want of room
_P = Presentation.__table__  # type: ignore[attr-defined]
_V = Verification.__table__  # type: ignore[attr-defined]


def descriptions(content: Mapping[str, Any]) -> dict[str, str]:
    """The ``description`` of each limit an action version's content declares, by limit name."""
    raw = content.get("limits")
    found = raw if isinstance(raw, list) else []
    return {
        item["name"]: item["description"]
        for item in found
        if isinstance(item, Mapping) and isinstance(item.get("name"), str) and item.get("description")
        if isinstance(item["description"], str)
    }


def version_descriptions(
    session: Session, org_id: str, version_ids: Iterable[str]
) -> dict[str, dict[str, str]]:
    """The limits' descriptions of the organization's action versions, by version id."""
    wanted = sorted(set(version_ids))
    if not wanted:
        return {}
    found = session.exec(
        select_rows(ActionVersion).where(
            col(ActionVersion.organization_id) == org_id, col(ActionVersion.id).in_(wanted)
        )
    )
    return {v.id: descriptions(v.content) for v in found}


def described_bounds(
    cred: Credential, described: Mapping[str, str] | None = None
) -> list[tuple[Bound, str | None]]:
    """The credential's bounds, each with its ``description`` when its action version gives one:
    the action's limits (their max resolved for the request), then the request's maxExecutions."""
    return [
        (b, None if b.name == limits.MAX_EXECUTIONS else (described or {}).get(b.name) or None)
        for b in limits.stored_bounds(cred.limits, cred.max_executions)
    ]


def bounds(cred: Credential, described: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """``described_bounds`` as ``policy.limits.Bound`` JSON with a ``description`` when there is one."""
    return [
        {**b.as_json(), **({"description": text} if text else {})}
        for b, text in described_bounds(cred, described)
    ]


def bounds_of(engine: Engine, org_id: str, cred: Credential) -> list[tuple[Bound, str | None]]:
    """``described_bounds`` of one credential of the organization, its version's descriptions read."""
    version = str((cred.action or {}).get("version") or "")
    if not cred.limits or not version:
        return described_bounds(cred)
    with read_session(engine) as session:
        described = version_descriptions(session, org_id, [version]).get(version)
    return described_bounds(cred, described)


def use_history(
    engine: Engine, credential_id: str, mandate_id: str, limit: int
) -> tuple[list[Verification], int]:
    """The newest ``limit`` verifications that used the mandate (allowed) or were refused for want
    of room (``limit_exceeded``), and how many there are. As in ``store.verifications
    .of_credential``, only the verifications of the VPs this service issued of the credential
    count: what a stranger made up about the mandate is not its use."""
    ours = select(_P.c.id).where(_P.c.credential_id == credential_id)
    conds = (
        _V.c.mandate_id == mandate_id,
        _V.c.presentation_id.in_(ours),
        or_(_V.c.decision == "allow", _V.c.reason == LIMIT_EXCEEDED),
    )
    with engine.connect() as conn:
        total = conn.execute(select(func.count()).select_from(_V).where(*conds)).scalar_one()
        rows = conn.execute(
            select(_V).where(*conds).order_by(_V.c.created_at.desc(), _V.c.id.desc()).limit(limit)
        ).all()
    return [Verification.model_validate(dict(r._mapping)) for r in rows], int(total)
