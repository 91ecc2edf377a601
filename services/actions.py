"""Actions and their numbered versions (CONTRACT 6): create, rename, add a version, edit a draft,
check it, try its rules, publish, delete; read. Done by a named actor (the command line's operator,
a dashboard member).

The dashboard's editor checks a draft with the functions publishing runs (``policy.actions``
``parse_action_spec`` and ``check_spec``, the rules' cost included) and tries its rules as a
verification runs them (a ``policy.jobs.RulesJob`` within the step budget, inline or in an
evaluation process), so what the editor says is what publishing and verifying do.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import Engine

from core.actors import Actor
from core.text import unsafe_characters
from policy.actions import MAX_NAME_LENGTH, ActionSpec, canonical_content, check_spec, parse_action_spec
from policy.cost import RULE_BUDGET
from policy.jobs import RulesJob
from policy.params import parse_params, validate_values
from policy.rules import Evaluation, Rule, RulesRun, check_rules
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import actions as store
from store.tables import Action, ActionVersion
from wire.numbers import reject_non_jcs

T = TypeVar("T")


class PublishRefused(Invalid):
    """The publish checks failed: ``problems`` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


def _refusing(work: Callable[[], T]) -> T:
    try:
        return work()
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.ActionRefused as exc:
        raise PublishRefused(list(exc.messages)) from exc


def create(
    ctx: Context, actor: Actor, org_id: str, spec: ActionSpec, action_id: str | None = None
) -> tuple[Action, ActionVersion]:
    """A new action with ``spec`` as its draft version 1 (under ``action_id`` when given)."""
    return _refusing(lambda: store.create_action(ctx.engine, org_id, spec, action_id=action_id))


def add_version(ctx: Context, actor: Actor, org_id: str, action_id: str, spec: ActionSpec) -> ActionVersion:
    """The action's next numbered draft."""
    return _refusing(lambda: store.add_version(ctx.engine, org_id, action_id, spec))


def publish(ctx: Context, actor: Actor, version_id: str, org_id: str | None = None) -> ActionVersion:
    """Run the publish checks and make the draft immutable, its ``digestSRI`` fixed."""
    return _refusing(lambda: store.publish(ctx.engine, version_id, org_id, actor=str(actor)))


def publish_newest_draft(ctx: Context, actor: Actor, org_id: str, action_id: str) -> ActionVersion:
    draft = store.newest_draft(ctx.engine, org_id, action_id)
    if draft is None:
        raise Conflict(f"action {action_id} has no draft version to publish")
    return publish(ctx, actor, draft.id, org_id)


def install_published(
    engine: Engine, actor: Actor, org_id: str, raw: dict[str, Any], action_id: str | None = None
) -> ActionVersion | None:
    """Install an action from its dict form as a published version 1, once: None when the
    organization has it already (the development organization's example action, benchmarks). Part
    of setting the organization up: no audit record, like its creation."""
    if action_id is not None and store.get_action(engine, org_id, action_id) is not None:
        return None
    return _refusing(lambda: store.install_published(engine, org_id, raw, action_id=action_id))


def list_actions(ctx: Context, org_id: str, *, published_only: bool = True) -> list[store.ActionView]:
    return store.list_actions(ctx.engine, org_id, published_only=published_only)


# --- the dashboard: reading ----------------------------------------------------------------------

MAX_DESCRIPTION_LENGTH = 2000  # the action table's column


@dataclass(frozen=True)
class VersionUse:
    """A version with its parsed content and the number of mandates issued against it."""

    version: ActionVersion
    spec: ActionSpec
    mandates: int


@dataclass(frozen=True)
class ActionDetail:
    """An action, every version (drafts included) and how many credentials name it: any one of
    them, a request awaiting its decision included, forbids deleting it (CONTRACT 6)."""

    action: Action
    versions: list[VersionUse]
    credentials: int

    @property
    def mandates(self) -> int:
        return sum(v.mandates for v in self.versions)


def overview(ctx: Context, actor: Actor, org_id: str) -> list[store.ActionView]:
    """Every action of the organization with every version, drafts included (the dashboard)."""
    return store.list_actions(ctx.engine, org_id, published_only=False)


def detail(ctx: Context, actor: Actor, org_id: str, action_id: str) -> ActionDetail:
    """One action of the organization; another organization's is NotFound like a missing one."""
    view = store.get_action(ctx.engine, org_id, action_id, published_only=False)
    if view is None:
        raise NotFound(f"action {action_id} not found")
    used = store.usage(ctx.engine, org_id, action_id)
    versions = [VersionUse(v, store.spec_of(v), used.mandates.get(v.id, 0)) for v in view.versions]
    return ActionDetail(view.action, versions, used.credentials)


def version(
    ctx: Context, actor: Actor, org_id: str, action_id: str, number: int
) -> tuple[Action, ActionVersion]:
    """Version ``number`` of one of the organization's actions, with the action."""
    found = store.version_by_number(ctx.engine, org_id, action_id, number)
    view = store.get_action(ctx.engine, org_id, action_id, published_only=False)
    if found is None or view is None:
        raise NotFound(f"version {number} of action {action_id} not found")
    return view.action, found


# --- the dashboard: changes -----------------------------------------------------------------------


def named(name: str, description: str) -> tuple[str, str | None]:
    """An action's name and description as typed, checked: the name on one line, 1 to 200
    characters; the description up to 2000, line breaks allowed. Invalid with every problem."""
    name, description = name.strip(), description.replace("\r\n", "\n").strip()
    problems = []
    if not name or len(name) > MAX_NAME_LENGTH:
        problems.append(f"The name is 1 to {MAX_NAME_LENGTH} characters.")
    elif unsafe_characters(name):
        problems.append(f"The name holds characters it may not: {', '.join(unsafe_characters(name))}.")
    if len(description) > MAX_DESCRIPTION_LENGTH:
        problems.append(f"The description is at most {MAX_DESCRIPTION_LENGTH} characters.")
    elif unsafe_characters(description.replace("\n", "")):
        shown = ", ".join(unsafe_characters(description.replace("\n", "")))
        problems.append(f"The description holds characters it may not: {shown}.")
    if problems:
        raise Invalid(problems)
    return name, description or None


def new_action(
    ctx: Context, actor: Actor, org_id: str, name: str, description: str
) -> tuple[Action, ActionVersion]:
    """A new action (``named`` checks its name and description) with an empty draft version 1."""
    name, text = named(name, description)
    return create(ctx, actor, org_id, ActionSpec(name=name, description=text))


def update(ctx: Context, actor: Actor, org_id: str, action_id: str, name: str, description: str) -> Action:
    """A new name and description; the drafts follow, published versions keep theirs."""
    name, text = named(name, description)
    try:
        return store.update_action(ctx.engine, org_id, action_id, name, text)
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc


def new_version(ctx: Context, actor: Actor, org_id: str, action_id: str) -> ActionVersion:
    """The action's next draft, a copy of its newest version under the action's current name and
    description: a change starts from what was last written."""
    view = store.get_action(ctx.engine, org_id, action_id, published_only=False)
    if view is None:
        raise NotFound(f"action {action_id} not found")
    action = view.action
    base = store.spec_of(view.versions[-1]) if view.versions else ActionSpec(action.name, None)
    return add_version(
        ctx, actor, org_id, action_id, replace(base, name=action.name, description=action.description)
    )


def save_draft(ctx: Context, actor: Actor, org_id: str, version_id: str, spec: ActionSpec) -> ActionVersion:
    """Replace a draft's content. A published version is immutable: Conflict."""
    jcs_problems = _unsignable(spec)
    if jcs_problems:
        raise Invalid([p.text for p in jcs_problems])
    try:
        return store.update_draft(ctx.engine, version_id, spec, org_id)
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.ActionRefused as exc:
        raise Conflict(list(exc.messages)) from exc


def delete(ctx: Context, actor: Actor, org_id: str, action_id: str) -> None:
    """Delete an action and its versions, unless a credential names it (CONTRACT 6): Conflict
    saying how many do."""
    try:
        store.delete_action(ctx.engine, org_id, action_id, actor=str(actor))
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.ActionRefused as exc:
        used = store.usage(ctx.engine, org_id, action_id)
        raise Conflict(undeletable(used.credentials, sum(used.mandates.values()))) from exc


def undeletable(credentials: int, mandates: int) -> str:
    """Why an action that credentials name cannot be deleted, in a member's words."""
    names = "names" if credentials == 1 else "name"
    return (
        f"This action cannot be deleted: {_count(credentials, 'request credential')} {names} it "
        f"({_count(mandates, 'issued mandate')}). A mandate pins the version it was issued against "
        "for good: publish a new version instead."
    )


def _count(n: int, thing: str) -> str:
    return f"{n} {thing}" + ("" if n == 1 else "s")


# --- the dashboard: the editor's checks and trials ------------------------------------------------

_PLACE_RE = re.compile(r"(executionParams|userParams|rules)\.(\d+)(.*)", re.DOTALL)


@dataclass(frozen=True)
class Problem:
    """A problem of a draft and what it concerns: ``part`` (``executionParams``, ``userParams``,
    ``rules``) and ``index`` (its position in that list) for a param or a rule, else ``action``
    and None; ``text`` without the place, shown next to the field."""

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


def placed(messages: list[str], spec: ActionSpec | None = None) -> list[Problem]:
    """The messages of ``parse_action_spec``, ``check_spec`` or a refused publish, each with the
    param or rule it concerns (their messages start with ``rules.3 (name)`` or ``userParams.0.``)."""
    problems = []
    for message in messages:
        match = _PLACE_RE.fullmatch(message)
        if match is None:
            problems.append(Problem("action", None, message))
            continue
        part, index, rest = match.group(1), int(match.group(2)), match.group(3)
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
        return Checked(spec, placed(check_spec(spec), spec) + _unsignable(spec))
    problems = placed(errors)
    execution, _ = parse_params(raw.get("executionParams"), where="executionParams", allow_defaults=False)
    user, _ = parse_params(raw.get("userParams"), where="userParams", allow_defaults=True)
    rules = raw.get("rules")
    unreadable = {p.index for p in problems if p.part == "rules" and p.text.startswith("expression")}
    for index, item in enumerate(rules if isinstance(rules, list) else []):
        expression = item.get("expression") if isinstance(item, dict) else None
        if index in unreadable or not isinstance(expression, str):
            continue
        for message in check_rules([Rule(name="rule", expression=expression)], execution, user):
            problems.append(Problem("rules", index, message.removeprefix("rules.0 (rule)").strip()))
    return Checked(None, problems)


def _unsignable(spec: ActionSpec) -> list[Problem]:
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
