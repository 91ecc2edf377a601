"""The dashboard editor's checks and trials of an action's draft (CONTRACT 6): what publishing
would say of it, each problem placed beside its param or rule, and its rules tried on sample values.

A draft is checked with the functions publishing runs (``policy.actions`` ``parse_action_spec`` and
``check_spec``, the rules' cost at their params' bounds included) and its rules are tried as a
verification runs them (a ``policy.jobs.RulesJob`` within the step budget of one verification,
inline or in an evaluation process), so what the editor says is what publishing and verifying do.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from core.actors import Actor
from policy.actions import ActionSpec, canonical_content, check_spec, parse_action_spec
from policy.cost import RULE_BUDGET
from policy.jobs import RulesJob
from policy.limits import check_limits, parse_limits
from policy.params import Param, parse_params, validate_values
from policy.rules import Evaluation, Rule, RulesRun, check_rules
from services.action_text import text_problems
from services.context import Context
from wire.numbers import reject_non_jcs

# a param's, rule's or limit's place: ``rules.3 (name)``, ``userParams.0.``, ``limits[1].`` or
# ``limits.1.``; and a limit named by what publishing checks of it (``limit monthly: ...``)
_PLACE_RE = re.compile(r"(executionParams|userParams|rules|limits)(?:\.(\d+)|\[(\d+)\])(.*)", re.DOTALL)
_LIMIT_RE = re.compile(r"limit ([a-zA-Z_][a-zA-Z0-9_]*): (.*)", re.DOTALL)


@dataclass(frozen=True)
class Problem:
    """A problem of a draft and what it concerns: ``part`` (``executionParams``, ``userParams``,
    ``rules``, ``limits``) and ``index`` (its position in that list) for a param, a rule or a
    limit, else ``action`` and None; ``text`` without the place, shown next to the field."""

    part: str
    index: int | None
    text: str


@dataclass(frozen=True)
class Checked:
    """A draft as checked: its spec (None when it does not parse) and its problems. Publishable
    exactly when publishing would accept it."""

    spec: ActionSpec | None
    problems: list[Problem]

    @property
    def publishable(self) -> bool:
        return self.spec is not None and not self.problems


def placed(
    messages: list[str], spec: ActionSpec | None = None, limit_names: list[Any] | None = None
) -> list[Problem]:
    """The messages of ``parse_action_spec``, ``check_spec`` or a refused publish, each with the
    param, rule or limit it concerns (their messages start with ``rules.3 (name)``,
    ``userParams.0.``, ``limits[1].``, or ``limit <name>:``, placed at the first limit of that name
    in ``limit_names``, by default the spec's)."""
    if limit_names is None:
        limit_names = [limit.name for limit in spec.limits] if spec is not None else []
    problems = []
    for message in messages:
        match = _PLACE_RE.fullmatch(message)
        named = _LIMIT_RE.fullmatch(message)
        if named is not None and named.group(1) in limit_names:
            problems.append(Problem("limits", limit_names.index(named.group(1)), named.group(2)))
            continue
        if match is None:
            problems.append(Problem("action", None, message))
            continue
        part, index, rest = match.group(1), int(match.group(2) or match.group(3)), match.group(4)
        if rest.startswith("."):
            rest = rest[1:]
        elif part == "rules" and spec is not None and index < len(spec.rules):
            rest = rest.removeprefix(f" ({spec.rules[index].name})")
        problems.append(Problem(part, index, rest.strip()))
    return problems


def check(ctx: Context, actor: Actor, raw: dict[str, Any]) -> Checked:
    """What publishing would say of a draft in its dict form, each problem placed.

    When the draft parses, its problems are ``check_spec``'s, and a default no signed form can hold
    (publishing could not compute its digest). When it does not (a param
    without a name while it is being typed, say), each row's own problems are given and each rule
    whose expression could be read is still checked, by ``check_rules``, against the params that
    do parse: a rule being typed is checked before its name is written.
    """
    spec, errors = parse_action_spec(raw)
    if spec is not None:
        return Checked(spec, placed(check_spec(spec) + text_problems(spec), spec) + unsignable(spec))
    problems = placed(errors)
    execution, _ = parse_params(raw.get("executionParams"), where="executionParams", allow_defaults=False)
    user, _ = parse_params(raw.get("userParams"), where="userParams", allow_defaults=True)
    rules = raw.get("rules")
    declared = raw.get("limits")
    names = (
        [item["name"] for item in declared if isinstance(item, dict) and isinstance(item.get("name"), str)]
        if isinstance(declared, list)
        else []
    )
    unreadable = {p.index for p in problems if p.part == "rules" and p.text.startswith("expression")}
    for index, item in enumerate(rules if isinstance(rules, list) else []):
        expression = item.get("expression") if isinstance(item, dict) else None
        if index in unreadable or not isinstance(expression, str):
            continue
        for message in check_rules([Rule(name="rule", expression=expression)], execution, user, limits=names):
            problems.append(Problem("rules", index, message.removeprefix("rules.0 (rule)").strip()))
    return Checked(None, problems + _limits_against(raw, execution, user))


def _limits_against(raw: dict[str, Any], execution: list[Param], user: list[Param]) -> list[Problem]:
    """The params each limit that can be read names, checked against the params that can: a
    limit's param is checked while another row is still being typed."""
    declared = raw.get("limits")
    limits, _ = parse_limits(declared)
    items: list[Any] = declared if isinstance(declared, list) else []
    names = [item.get("name") if isinstance(item, dict) else None for item in items]
    return [p for p in placed(check_limits(limits, execution, user), limit_names=names) if p.part == "limits"]


def unsignable(spec: ActionSpec) -> list[Problem]:
    """Defaults a signed form cannot hold (an integer beyond 2^53): stored, the version could never
    get its digestSRI."""
    problems = []
    for index, param in enumerate(spec.user_params):
        try:
            reject_non_jcs({"default": param.default})
        except ValueError as exc:
            problems.append(Problem("userParams", index, str(exc)))
    return problems


@dataclass(frozen=True)
class Tried:
    """The rules of a draft run on sample values: one evaluation per rule (``pass``, ``fail`` or
    ``error`` with its reason), or the problems of the values, which verification would refuse
    before any rule runs. ``limit_reached``: the rules were stopped at the step budget of one
    verification (which would be denied with ``rule_limit_exceeded``) after ``steps``."""

    evaluations: list[Evaluation]
    problems: list[str]
    limit_reached: bool = False
    steps: int = 0


async def try_rules(
    ctx: Context,
    actor: Actor,
    org_id: str,
    spec: ActionSpec,
    version_key: str,
    execution_values: dict[str, Any],
    user_values: dict[str, Any],
    now: datetime,
) -> Tried:
    """Run the rules as a verification runs them, at ``now``: executionParams checked against the
    declared ones, their types and bounds (``execution_params_invalid`` refuses before the rules),
    userParams as a request pins them (defaults fill omitted ones); then the rules within the
    budget of one verification, on a thread of their own when ``RulesJob.runs_inline`` allows,
    else in an evaluation process in the organization's turn (``Context.rules``): ``TooMany``
    when too many of its jobs wait, ``Unavailable`` when no process answers. Nothing of it runs
    on the event loop."""
    trial = await asyncio.to_thread(_trial, spec, version_key, execution_values, user_values, now)
    if isinstance(trial, Tried):
        return trial
    return _tried(await ctx.rules.run(org_id, trial))


def _trial(
    spec: ActionSpec,
    version_key: str,
    execution_values: dict[str, Any],
    user_values: dict[str, Any],
    now: datetime,
) -> Tried | RulesJob:
    """The values' problems, or the rules run here when they may run inline, or else their job."""
    execution, problems = validate_values(
        spec.execution_params, execution_values, where="executionParams", fill_defaults=False
    )
    user, user_problems = validate_values(
        spec.user_params, user_values, where="userParams", fill_defaults=True
    )
    if problems or user_problems:
        return Tried([], problems + user_problems)
    job = RulesJob(
        draft_key(version_key, spec),
        spec.rules,
        spec.execution_params,
        spec.user_params,
        execution,
        user,
        now,
        RULE_BUDGET,
    )
    return _tried(job.run()) if job.runs_inline() else job


def draft_key(version_key: str, spec: ActionSpec) -> str:
    """The key a draft's rules are compiled and estimated under: the version's id and a digest of
    the content as tried. A draft changes under its id, and ``policy.jobs`` remembers a version's
    estimate at its params' bounds by its key and expressions, which a changed bound must not reuse."""
    content = json.dumps(canonical_content(spec), sort_keys=True, ensure_ascii=False)
    return f"{version_key}#{hashlib.sha256(content.encode()).hexdigest()[:32]}"


def _tried(run: RulesRun) -> Tried:
    return Tried(run.evaluations, [], limit_reached=run.limit_reached, steps=run.steps)
