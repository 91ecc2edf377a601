"""Actions and their numbered versions (CONTRACT 6): create, add a version, publish; read. Done by
a named actor (the command line's operator today, a dashboard member next)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from sqlalchemy import Engine

from core.actors import Actor
from policy.actions import ActionSpec
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import actions as store
from store.tables import Action, ActionVersion

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
