"""Actions and their numbered versions (CONTRACT 6): create, rename, add a version, edit a draft,
publish, delete; read. Done by a named actor (the command line's operator, a dashboard member).
The editor's checks of a draft and trials of its rules are ``services.action_drafts``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from sqlalchemy import Engine

from core.actors import Actor
from core.text import unsafe_characters
from policy.actions import MAX_NAME_LENGTH, ActionSpec
from services.action_drafts import unsignable
from services.action_text import text_problems
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import actions as store
from store.actions import ActionView as ActionView  # an action with its versions, oldest first
from store.actions import content_fields as content_fields  # a version's content as the API shows it
from store.actions import is_action_urn as is_action_urn
from store.tables import Action, ActionVersion

T = TypeVar("T")


class PublishRefused(Invalid):
    """The publish checks failed: ``problems`` lists each one."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__(problems)
        self.problems = problems


ALLOWS_ANY = (
    "This version has no rules and no use limits: its mandates will allow any execution of the "
    "action, with any params. Confirm to publish it anyway."
)


class AllowsAnyExecution(Invalid):
    """A version without rules or limits is published only when the publisher says they mean it."""

    def __init__(self) -> None:
        super().__init__(ALLOWS_ANY)


def allows_any(spec: ActionSpec) -> bool:
    """A version whose mandates would allow every execution: no rule compares, no limit counts."""
    return not spec.rules and not spec.limits


def _refusing(work: Callable[[], T]) -> T:
    try:
        return work()
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc
    except store.ActionRefused as exc:
        raise PublishRefused(list(exc.messages)) from exc


def _readable(spec: ActionSpec) -> None:
    """``Invalid`` naming each text of ``spec`` that ``core.text`` refuses (``services.action_text``)."""
    problems = text_problems(spec)
    if problems:
        raise Invalid(problems)


def create(
    ctx: Context, actor: Actor, org_id: str, spec: ActionSpec, action_id: str | None = None
) -> tuple[Action, ActionVersion]:
    """A new action with ``spec`` as its draft version 1 (under ``action_id`` when given)."""
    _readable(spec)
    return _refusing(lambda: store.create_action(ctx.engine, org_id, spec, action_id=action_id))


def add_version(ctx: Context, actor: Actor, org_id: str, action_id: str, spec: ActionSpec) -> ActionVersion:
    """The action's next numbered draft."""
    _readable(spec)
    return _refusing(lambda: store.add_version(ctx.engine, org_id, action_id, spec))


def publish(
    ctx: Context, actor: Actor, version_id: str, org_id: str | None = None, *, allow_any: bool = False
) -> ActionVersion:
    """Run the publish checks and make the draft immutable, its ``digestSRI`` fixed. A draft stored
    before ``core.text``'s rule that breaks it is refused with the publish checks' problems; one
    without rules or limits (its mandates allow any execution) needs ``allow_any``."""
    draft = store.get_version(ctx.engine, version_id)
    if draft is not None and (org_id is None or draft.organization_id == org_id):
        spec = store.spec_of(draft)
        problems = text_problems(spec) if draft.status == store.DRAFT else []
        if problems:
            raise PublishRefused(problems)
        if draft.status == store.DRAFT and allows_any(spec) and not allow_any:
            raise AllowsAnyExecution()
    return _refusing(lambda: store.publish(ctx.engine, version_id, org_id, actor=str(actor)))


def publish_newest_draft(
    ctx: Context, actor: Actor, org_id: str, action_id: str, *, allow_any: bool = False
) -> ActionVersion:
    draft = store.newest_draft(ctx.engine, org_id, action_id)
    if draft is None:
        raise Conflict(f"action {action_id} has no draft version to publish")
    return publish(ctx, actor, draft.id, org_id, allow_any=allow_any)


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
    elif unsafe_characters(description, multiline=True):
        shown = ", ".join(unsafe_characters(description, multiline=True))
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
    description: a change starts from what was last written. A copy is not held to the text rule
    (``add_version`` is): what was stored before it is copied as it is, shown escaped with its
    problems in the editor, and cannot be published until it is fixed."""
    view = store.get_action(ctx.engine, org_id, action_id, published_only=False)
    if view is None:
        raise NotFound(f"action {action_id} not found")
    action = view.action
    base = store.spec_of(view.versions[-1]) if view.versions else ActionSpec(action.name, None)
    spec = replace(base, name=action.name, description=action.description)
    return _refusing(lambda: store.add_version(ctx.engine, org_id, action_id, spec))


def save_draft(ctx: Context, actor: Actor, org_id: str, version_id: str, spec: ActionSpec) -> ActionVersion:
    """Replace a draft's content. A published version is immutable: Conflict."""
    _readable(spec)
    jcs_problems = unsignable(spec)
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


# --- the API and the command line: reading -------------------------------------------------------


async def published_actions(ctx: Context, org_id: str) -> list[ActionView]:
    """The organization's actions with a published version, each with its published versions
    (``GET /actions``; read on a thread)."""
    return await asyncio.to_thread(store.list_actions, ctx.engine, org_id)


async def published_action(ctx: Context, org_id: str, action_id: str) -> ActionView | None:
    """One action of the organization with its published versions, None when it has none (or is
    not the organization's); read on a thread."""
    return await asyncio.to_thread(store.get_action, ctx.engine, org_id, action_id)


def organizations_with_action(ctx: Context, action_id: str) -> list[str]:
    """The organizations holding an action of that URN (``mandatum action`` without ``--org``)."""
    return store.organizations_with_action(ctx.engine, action_id)


def newest_draft(ctx: Context, org_id: str, action_id: str) -> ActionVersion | None:
    """The action's newest draft version, None when it has none."""
    return store.newest_draft(ctx.engine, org_id, action_id)
