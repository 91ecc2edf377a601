"""Use limits and budgets of a mandate (issue 31): declared in an action version, resolved and
signed into each mandate at issuance, enforced with state at verify.

- An action version declares ``limits`` beside its params and rules: ``executions`` (at most N
  allowed verifications over the mandate's life), ``sum`` (the sum of a numeric execution param
  over a period at most M) and ``rate`` (at most K allowed verifications per period). Each ``max``
  is a number or ``userParams.<name>`` (a numeric user param: each request sets its own budget).
- Periods are calendar periods in UTC: ``P1D`` a day, ``P1W`` an ISO week (from Monday 00:00),
  ``P1M`` a calendar month; no period is the mandate's whole life. ``executions`` has none;
  ``rate`` needs one.
- A request's ``maxExecutions`` is one more executions bound, named ``maxExecutions`` (a name no
  action may take).
- At issuance each limit becomes a ``Bound`` (its ``max`` a number) and is signed into the
  mandate's ``credentialSubject.mandate.limits``. At verify the bounds are read from the signed
  mandate and the use from the credential's row (``Usage``): ``assess`` says how much each would
  use and whether it fits, ``spent`` what the row holds after an allowed one.

Pure: imports nothing of the project but ``policy.params``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any, TypeGuard

from policy.params import NAME_RE, Param

KINDS = ("executions", "sum", "rate")
PERIODS = {"P1D": "day", "P1W": "week", "P1M": "calendar month"}
MAX_EXECUTIONS = "maxExecutions"  # the request's own bound; no limit of an action takes the name
MAX_LIMITS = 20
MAX_NUMBER = 10**15  # a bound or a sum's step beyond this is no budget anyone means
NUMERIC = ("number", "integer")
USER_REF_RE = re.compile(r"^userParams\.([a-zA-Z_][a-zA-Z0-9_]*)$")
_KEYS = {"name", "kind", "max", "param", "period", "unit", "description"}
_MAX_DESCRIPTION = 500
UNIT_RE = re.compile(r"^[^\x00-\x1f\x7f-\x9f\u2028\u2029]{1,16}$")  # "EUR", "kWh": one short line


def _present(**members: Any) -> dict[str, Any]:
    """The optional members that apply: an absent one is left out, never null."""
    return {name: value for name, value in members.items() if value is not None}


def instant(moment: datetime) -> str:
    """A period's end as the answers write it (UTC, whole seconds, Z)."""
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class Limit:
    """A limit as an action version declares it."""

    name: str
    kind: str
    max: int | float | str  # a number, or "userParams.<name>"
    param: str | None = None  # ``sum``: the execution param summed
    period: str | None = None  # a key of PERIODS; None: the mandate's life
    unit: str | None = None  # ``sum``: what the amounts count ("EUR"), shown beside them
    description: str | None = None

    @property
    def user_param(self) -> str | None:
        """The user param that sets ``max``, when one does."""
        found = USER_REF_RE.match(self.max) if isinstance(self.max, str) else None
        return found.group(1) if found else None

    def as_json(self) -> dict[str, Any]:
        optional = _present(
            param=self.param, period=self.period, unit=self.unit, description=self.description
        )
        return {"name": self.name, "kind": self.kind, "max": self.max, **optional}


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == value


def _limit_problems(raw: dict[str, Any], at: str) -> list[str]:
    problems = [f"{at}.{key} is not a known field of a limit" for key in sorted(set(raw) - _KEYS, key=str)]
    name, kind, most = raw.get("name"), raw.get("kind"), raw.get("max")
    param, period, description = raw.get("param"), raw.get("period"), raw.get("description")
    unit = raw.get("unit")
    if unit is not None and not (isinstance(unit, str) and UNIT_RE.match(unit) and unit.strip() == unit):
        problems.append(f"{at}.unit must be one line of 1 to 16 characters (EUR, kWh)")
    if unit is not None and kind != "sum":
        problems.append(f"{at}.unit is only for a sum limit (a count has no unit)")
    if not isinstance(name, str) or not NAME_RE.match(name) or len(name) > 100:
        problems.append(f"{at}.name must be an identifier (letters, digits, _) of at most 100 characters")
    elif name == MAX_EXECUTIONS:
        problems.append(f"{at}.name {MAX_EXECUTIONS} is the request's own bound: choose another name")
    if kind not in KINDS:
        problems.append(f"{at}.kind must be one of {', '.join(KINDS)}")
    if _number(most):
        if not 0 <= most <= MAX_NUMBER:
            problems.append(f"{at}.max must be between 0 and {MAX_NUMBER:,}")
        elif kind in ("executions", "rate") and not float(most).is_integer():
            problems.append(
                f"{at}.max of {'an' if kind == 'executions' else 'a'} {kind} limit must be a whole number"
            )
    elif not (isinstance(most, str) and USER_REF_RE.match(most)):
        problems.append(f"{at}.max must be a number or userParams.<name>")
    if kind == "sum" and not (isinstance(param, str) and NAME_RE.match(param)):
        problems.append(f"{at}.param must name the numeric execution param a sum limit adds up")
    if kind in ("executions", "rate") and param is not None:
        problems.append(f"{at}.param is only for a sum limit")
    if period is not None and period not in PERIODS:
        problems.append(f"{at}.period must be one of {', '.join(PERIODS)}, or absent for the mandate's life")
    if kind == "executions" and period is not None:
        problems.append(f"{at}.period: an executions limit counts over the mandate's life (use rate)")
    if kind == "rate" and period is None:
        problems.append(f"{at}.period is required for a rate limit ({', '.join(PERIODS)})")
    if description is not None and (not isinstance(description, str) or len(description) > _MAX_DESCRIPTION):
        problems.append(f"{at}.description must be a string of at most {_MAX_DESCRIPTION} characters")
    return problems


def parse_limits(raw: Any, *, where: str = "limits") -> tuple[list[Limit], list[str]]:
    """The limits of an action spec (absent is none); the errors, naming each by its place."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{where} must be a list of limits"]
    if len(raw) > MAX_LIMITS:
        return [], [f"{where} has {len(raw)} items, more than the {MAX_LIMITS} an action may have"]
    limits: list[Limit] = []
    errors: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        at = f"{where}[{i}]"
        if not isinstance(item, dict):
            errors.append(f"{at} must be an object with name, kind and max")
            continue
        problems = _limit_problems(item, at)
        name = item.get("name")
        if isinstance(name, str) and name in seen:
            problems.append(f"{at}.name {name} is declared twice")
        seen.add(name if isinstance(name, str) else "")
        if problems:
            errors += problems
            continue
        limits.append(
            Limit(
                item["name"],
                item["kind"],
                item["max"],
                item.get("param"),
                item.get("period"),
                item.get("unit"),
                item.get("description"),
            )
        )
    return limits, errors


def check_limits(
    limits: Iterable[Limit], execution_params: list[Param], user_params: list[Param]
) -> list[str]:
    """What publishing checks beyond the shape: a sum adds up a declared numeric execution param,
    and a ``max`` read from the user's params reads a declared numeric one."""
    execution = {p.name: p for p in execution_params}
    user = {p.name: p for p in user_params}
    errors = []
    for limit in limits:
        if limit.kind == "sum":
            found = execution.get(limit.param or "")
            if found is None:
                errors.append(f"limit {limit.name}: executionParams has no param {limit.param}")
            elif found.type not in NUMERIC:
                errors.append(
                    f"limit {limit.name}: executionParams.{limit.param} is a {found.type}; "
                    "a sum needs a number"
                )
        ref = limit.user_param
        if ref is not None:
            found = user.get(ref)
            if found is None:
                errors.append(f"limit {limit.name}: userParams has no param {ref}")
            elif found.type not in NUMERIC:
                errors.append(f"limit {limit.name}: userParams.{ref} is a {found.type}; a max needs a number")
    return errors


# --- a mandate's bounds: limits with their max resolved, as signed into the mandate ---------------


@dataclass(frozen=True)
class Bound:
    name: str
    kind: str
    max: int | float
    param: str | None = None
    period: str | None = None
    unit: str | None = None

    def as_json(self) -> dict[str, Any]:
        optional = _present(param=self.param, period=self.period, unit=self.unit)
        return {"name": self.name, "kind": self.kind, "max": self.max, **optional}

    @property
    def counts_uses(self) -> bool:
        """An executions bound: when spent, the mandate can never be used again."""
        return self.kind == "executions"

    def room(self, used: Decimal) -> Decimal:
        """What is left of it once ``used`` is used (never below zero)."""
        return max(Decimal(0), decimal(self.max) - used)


def resolve(limits: Iterable[Limit], user_values: Mapping[str, Any]) -> tuple[list[Bound], list[str]]:
    """Each limit with its ``max`` read from the approved user params where it names one."""
    bounds, errors = [], []
    for limit in limits:
        most: Any = limit.max
        ref = limit.user_param
        if ref is not None:
            most = user_values.get(ref)
            if not _number(most) or not 0 <= most <= MAX_NUMBER:
                errors.append(
                    f"limit {limit.name}: userParams.{ref} must be a number between 0 and {MAX_NUMBER:,}"
                )
                continue
            if limit.kind != "sum" and not float(most).is_integer():
                errors.append(f"limit {limit.name}: userParams.{ref} must be a whole number (a count)")
                continue
            if isinstance(most, float) and most.is_integer() and limit.kind != "sum":
                most = int(most)
        bounds.append(Bound(limit.name, limit.kind, most, limit.param, limit.period, limit.unit))
    return bounds, errors


def with_max_executions(bounds: list[Bound], max_executions: int | None) -> list[Bound]:
    """The mandate's bounds and the request's ``maxExecutions`` as one more, when given."""
    if max_executions is None:
        return list(bounds)
    return [*bounds, Bound(MAX_EXECUTIONS, "executions", max_executions)]


def stored_bounds(limits: list[dict[str, Any]] | None, max_executions: int | None) -> list[Bound]:
    """A credential row's bounds (its ``limits`` and ``max_executions`` columns, as signed): the
    action's, then the request's ``maxExecutions``."""
    found = signed_bounds({"limits": limits} if limits else {}) or []
    return with_max_executions(found, max_executions)


def signed_bounds(mandate: Mapping[str, Any]) -> list[Bound] | None:
    """The bounds a signed mandate (``credentialSubject.mandate``) carries: its ``limits`` and its
    ``maxExecutions``; None when they are not what this service signs (a mandate made up)."""
    bounds: list[Bound] = []
    raw = mandate.get("limits")
    if raw is not None:
        if not isinstance(raw, list) or len(raw) > MAX_LIMITS:
            return None
        for item in raw:
            if not isinstance(item, Mapping) or not _number(item.get("max")) or item.get("kind") not in KINDS:
                return None
            name, param, period, unit = (item.get(k) for k in ("name", "param", "period", "unit"))
            if not isinstance(name, str) or (period is not None and period not in PERIODS):
                return None
            if item["kind"] == "sum" and not isinstance(param, str):
                return None
            bounds.append(
                Bound(name, item["kind"], item["max"], param, period, unit if isinstance(unit, str) else None)
            )
    most = mandate.get(MAX_EXECUTIONS)
    if most is not None:
        if not isinstance(most, int) or isinstance(most, bool) or most < 1:
            return None
        bounds.append(Bound(MAX_EXECUTIONS, "executions", most))
    return bounds


# --- periods (UTC calendar) -------------------------------------------------------------------------


def window(period: str | None, now: datetime) -> tuple[str, datetime | None]:
    """The key of the period ``now`` falls in, and when it ends (None: the mandate's life)."""
    now = now.astimezone(UTC)
    day = now.replace(hour=0, minute=0, second=0, microsecond=0)
    if period is None:
        return "", None
    if period == "P1D":
        return day.strftime("%Y-%m-%d"), day + timedelta(days=1)
    if period == "P1W":
        year, week, weekday = now.isocalendar()
        return f"{year}-W{week:02d}", day + timedelta(days=8 - weekday)
    if period == "P1M":
        start = day.replace(day=1)
        following = (start + timedelta(days=32)).replace(day=1)
        return start.strftime("%Y-%m"), following
    raise ValueError(f"unknown period {period}")


# --- use: what the credential's row holds, and one verification's share ---------------------------

Usage = dict[str, dict[str, str]]  # per bound: {"p": period key, "u": used, a decimal as text}


def decimal(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0)


def as_number(value: Decimal) -> int | float:
    """A decimal as the JSON number it stands for."""
    return int(value) if value == value.to_integral_value() else float(value)


@dataclass(frozen=True)
class Use:
    """One bound, for one verification: what it had used in its current period, what this
    verification would add, and whether that fits."""

    bound: Bound
    period_key: str
    resets_at: datetime | None
    used: Decimal
    amount: Decimal
    problem: str | None = None  # the amount cannot be counted (a negative or missing sum's param)

    @property
    def fits(self) -> bool:
        return self.problem is None and self.used + self.amount <= decimal(self.bound.max)

    @property
    def remaining(self) -> Decimal:
        return self.bound.room(self.used)

    def evaluation(self, *, allowed: bool) -> dict[str, Any]:
        """As a verification reports it: after this use when ``allowed``, else as it stands."""
        used = self.used + self.amount if allowed else self.used
        remaining = self.bound.room(used)
        out: dict[str, Any] = {
            "name": self.bound.name,
            "kind": self.bound.kind,
            "max": self.bound.max,
            "used": as_number(used),
            "remaining": as_number(remaining),
            "amount": as_number(self.amount),
            "result": "pass" if (allowed or self.fits) else "fail",
        }
        if self.bound.param is not None:
            out["param"] = self.bound.param
        if self.bound.period is not None:
            out["period"] = self.bound.period
        if self.resets_at is not None:
            out["resetsAt"] = instant(self.resets_at)
        if self.problem is not None:
            out["reason"] = self.problem
        elif not allowed and not self.fits:
            out["reason"] = f"needs {as_number(self.amount)}, {as_number(self.remaining)} left"
        return out


def used_now(
    bound: Bound, usage: Mapping[str, Any] | None, now: datetime
) -> tuple[str, datetime | None, Decimal]:
    """The bound's period now, when it ends, and what was used in it."""
    key, resets = window(bound.period, now)
    held = (usage or {}).get(bound.name)
    used = decimal(held.get("u", 0)) if isinstance(held, Mapping) and held.get("p") == key else Decimal(0)
    return key, resets, used


def assess(
    bounds: Iterable[Bound],
    usage: Mapping[str, Any] | None,
    execution_values: Mapping[str, Any],
    now: datetime,
) -> list[Use]:
    """Each bound's use by one verification with ``execution_values``, against ``usage``."""
    uses = []
    for bound in bounds:
        key, resets, used = used_now(bound, usage, now)
        problem = None
        if bound.kind == "sum":
            value = execution_values.get(bound.param or "")
            if not _number(value):
                problem, amount = f"executionParams.{bound.param} is not a number", Decimal(0)
            elif value < 0:
                problem, amount = f"executionParams.{bound.param} is negative", Decimal(0)
            else:
                amount = decimal(value)
        else:
            amount = Decimal(1)
        uses.append(Use(bound, key, resets, used, amount, problem))
    return uses


def spent(usage: Mapping[str, Any] | None, uses: Iterable[Use]) -> Usage:
    """The row's usage after an allowed verification made ``uses``."""
    out: Usage = {k: dict(v) for k, v in (usage or {}).items() if isinstance(v, Mapping)}
    for use in uses:
        out[use.bound.name] = {"p": use.period_key, "u": str(use.used + use.amount)}
    return out


def exhausted(uses: Iterable[Use]) -> bool:
    """Whether an allowed verification with ``uses`` spent an executions bound: the mandate can
    never be used again."""
    return any(u.bound.counts_uses and u.used + u.amount >= decimal(u.bound.max) for u in uses)


def executions_remaining(
    bounds: Iterable[Bound], usage: Mapping[str, Any] | None, now: datetime
) -> int | None:
    """The uses left under the mandate's executions bounds (the smallest); None for none."""
    left = [int(b.room(used_now(b, usage, now)[2])) for b in bounds if b.counts_uses]
    return min(left) if left else None


def usage_fields(
    bounds: Iterable[Bound], usage: Mapping[str, Any] | None, now: datetime
) -> dict[str, dict[str, Any]]:
    """What rules read as ``usage.<name>``: ``used`` and ``remaining`` before this verification."""
    out = {}
    for bound in bounds:
        used = used_now(bound, usage, now)[2]
        out[bound.name] = {
            "used": as_number(used),
            "remaining": as_number(bound.room(used)),
        }
    return out
