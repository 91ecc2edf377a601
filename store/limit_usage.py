"""What the pages read of a mandate's use limits (issue 31): its bounds as a person reads them (each
limit with its ``max`` resolved for the request, its action version's ``description`` beside it,
then the request's ``maxExecutions``). The counting itself is ``store.limit_use``'s, in the
verification's transaction."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlmodel import Session, col
from sqlmodel import select as select_rows

from policy import limits
from policy.limits import Bound
from store.tables import ActionVersion, Credential


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
    signed = limits.signed_bounds({"limits": cred.limits} if cred.limits else {}) or []
    return [
        (b, None if b.name == limits.MAX_EXECUTIONS else (described or {}).get(b.name) or None)
        for b in limits.with_max_executions(signed, cred.max_executions)
    ]


def bounds(cred: Credential, described: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """``described_bounds`` as ``policy.limits.Bound`` JSON with a ``description`` when there is one."""
    return [
        {**b.as_json(), **({"description": text} if text else {})}
        for b, text in described_bounds(cred, described)
    ]
