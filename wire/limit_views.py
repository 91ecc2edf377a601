"""A credential's use limits as the API shows them (issue 31): ``executionsRemaining`` (null when
unlimited, 0 when spent) and each bound's use in its current period. Read from the credential's
row: its ``max_executions``, its ``limits`` (the action's bounds, resolved for the request) and its
``usage``; ``now`` says which period is current (UTC calendar periods, ``policy.limits``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Protocol

from policy import limits
from policy.limits import Bound


class Limited(Protocol):
    """What a credential's row holds of its limits (``store.tables.Credential``)."""

    max_executions: int | None
    limits: list[dict[str, Any]] | None
    usage: dict[str, Any] | None


def bounds_of(cred: Limited) -> list[Bound]:
    """The credential's bounds: its action's, then the request's ``maxExecutions``."""
    return limits.stored_bounds(cred.limits, cred.max_executions)


def limit_uses(cred: Limited, now: datetime) -> list[dict[str, Any]]:
    """Each bound with what it used in its current period and the room left."""
    out = []
    for bound in bounds_of(cred):
        _, resets, used = limits.used_now(bound, cred.usage, now)
        item: dict[str, Any] = {
            **bound.as_json(),
            "used": limits.as_number(used),
            "remaining": limits.as_number(bound.room(used)),
        }
        if resets is not None:
            item["resetsAt"] = limits.instant(resets)
        out.append(item)
    return out


def executions_remaining(cred: Limited, now: datetime) -> int | None:
    """The uses left under the smallest executions bound; None when there is none."""
    return limits.executions_remaining(bounds_of(cred), cred.usage, now)
