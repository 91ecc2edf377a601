"""Actions and their numbered versions (CONTRACT 6): drafts, publishing, and what POST /request pins.

A version is created as a draft holding the canonical content of its spec. Publishing runs the
publish checks of ``policy.actions.check_spec`` and stores ``digestSRI`` (SHA-256 of the JCS form of
the content); from then on the version is immutable: these functions refuse to change it, and a
trigger (migration 0003) aborts any UPDATE of a published row. The CLI calls these functions today;
the dashboard will call the same ones.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import Engine, String, cast, delete
from sqlmodel import Session, col, func, select

from core.ids import urn
from core.kinds import ActionVersionStatus
from policy.actions import ActionSpec, canonical_content, check_spec, parse_action_spec
from policy.limits import resolve
from policy.params import validate_values
from store import audit
from store.db import read_session, utcnow, write_session
from store.tables import Action, ActionVersion, Credential, CredentialRequest, Organization
from trust.credentials import action_pin, digest_sri

DRAFT, PUBLISHED = ActionVersionStatus.DRAFT, ActionVersionStatus.PUBLISHED
_UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
ACTION_URN_RE = re.compile(rf"^urn:via:action:{_UUID}$")
VERSION_URN_RE = re.compile(rf"^urn:via:action-version:{_UUID}$")


class NotFound(LookupError):
    pass


class ActionRefused(ValueError):
    """A change the rules refuse; ``messages`` lists every reason (e.g. each failed publish check)."""

    def __init__(self, messages: list[str] | str) -> None:
        self.messages = [messages] if isinstance(messages, str) else list(messages)
        super().__init__("; ".join(self.messages))


@dataclass(frozen=True)
class ActionView:
    """An action with the versions the caller may see (published only, unless asked otherwise),
    in ascending number."""

    action: Action
    versions: list[ActionVersion]


def is_action_urn(value: str) -> bool:
    return ACTION_URN_RE.fullmatch(value) is not None


def is_version_urn(value: str) -> bool:
    return VERSION_URN_RE.fullmatch(value) is not None


# --- changes --------------------------------------------------------------------------------------


def create_action(
    engine: Engine, org_id: str, spec: ActionSpec, *, action_id: str | None = None
) -> tuple[Action, ActionVersion]:
    """A new action with its draft version 1. ``action_id`` installs it under a known URN (the same
    action in a staging and a production organization); by default a fresh one is made."""
    action_id = action_id or urn("action")
    if not is_action_urn(action_id):
        raise ActionRefused(f"{action_id} is not an action URN urn:via:action:<uuid>")
    with write_session(engine) as session:
        if session.get(Organization, org_id) is None:
            raise NotFound(f"organization {org_id} not found")
        if session.get(Action, (org_id, action_id)) is not None:
            raise ActionRefused(f"action {action_id} already exists in organization {org_id}")
        action = Action(
            organization_id=org_id,
            id=action_id,
            name=spec.name,
            description=spec.description or None,
            created_at=utcnow(),
        )
        session.add(action)
        session.flush()
        version = _new_version(session, action, spec, 1)
    return action, version


def add_version(engine: Engine, org_id: str, action_id: str, spec: ActionSpec) -> ActionVersion:
    """The next numbered draft of an action."""
    with write_session(engine) as session:
        # the row lock (PostgreSQL) serializes concurrent additions, so numbers never collide
        action = session.exec(
            select(Action).where(Action.organization_id == org_id, Action.id == action_id).with_for_update()
        ).first()
        if action is None:
            raise NotFound(f"action {action_id} not found")
        last = session.exec(
            select(func.max(ActionVersion.number)).where(
                ActionVersion.organization_id == org_id, ActionVersion.action_id == action_id
            )
        ).one()
        return _new_version(session, action, spec, (last or 0) + 1)


def update_draft(
    engine: Engine, version_id: str, spec: ActionSpec, org_id: str | None = None
) -> ActionVersion:
    """Replace a draft's content (for the dashboard's editor); a published version is refused."""
    with write_session(engine) as session:
        version = _locked_version(session, version_id, org_id)
        if version.status == PUBLISHED:
            raise ActionRefused(
                f"version {version.number} of {version.action_id} is published "
                f"and immutable; add a new version instead"
            )
        version.content = canonical_content(spec)
        return version


def update_action(engine: Engine, org_id: str, action_id: str, name: str, description: str | None) -> Action:
    """Rename an action and change its description (the dashboard). Its drafts follow, so the version
    published next carries them (publishing copies a version's name onto the action); published
    versions keep the name they were published with, which their digestSRI covers."""
    with write_session(engine) as session:
        action = session.exec(
            select(Action).where(Action.organization_id == org_id, Action.id == action_id).with_for_update()
        ).first()
        if action is None:
            raise NotFound(f"action {action_id} not found")
        action.name, action.description = name, description or None
        session.add(action)
        drafts = session.exec(
            select(ActionVersion).where(
                ActionVersion.organization_id == org_id,
                ActionVersion.action_id == action_id,
                ActionVersion.status == DRAFT,
            )
        )
        for draft in drafts:
            draft.content = canonical_content(replace(spec_of(draft), name=name, description=description))
            session.add(draft)
        return action


def publish(engine: Engine, version_id: str, org_id: str | None = None, *, actor: str) -> ActionVersion:
    """Publish a draft: every publish check must pass (all failures are raised together), then its
    digestSRI is stored and the action's name and description follow the published content. The
    ``ACTION_PUBLISHED`` record names the version and its digest, and the ``previous`` ones: the
    version new requests pinned until then (none for the action's first)."""
    return _publish(engine, version_id, org_id, actor)


def _publish(engine: Engine, version_id: str, org_id: str | None, actor: str | None) -> ActionVersion:
    """``publish``, recorded when there is an actor (an organization's setting-up has none)."""
    key = audit.signer(engine) if actor is not None else None
    with write_session(engine) as session:
        version = _locked_version(session, version_id, org_id)
        if version.status == PUBLISHED:
            raise ActionRefused(f"version {version.number} of {version.action_id} is already published")
        spec = spec_of(version)
        errors = check_spec(spec)
        if errors:
            raise ActionRefused(errors)
        previous = _pinned_until_now(session, version) if key is not None else None
        version.status = PUBLISHED
        version.digest_sri = digest_sri(version.content)
        version.published_at = utcnow()
        action = session.get(Action, (version.organization_id, version.action_id))
        if action is not None:
            action.name, action.description = spec.name, spec.description or None
            session.add(action)
        session.add(version)
        if key is not None and actor is not None:
            session.flush()
            data: dict[str, Any] = {
                "actionId": version.action_id,
                "version": version.number,
                "digestSRI": version.digest_sri,
            }
            if previous is not None:
                data["previous"] = {"version": previous.number, "digestSRI": previous.digest_sri}
            entry = audit.Entry(audit.ACTION_PUBLISHED, version.organization_id, actor=actor, data=data)
            audit.append(session.connection(), key, entry)
        return version


def _pinned_until_now(session: Session, version: ActionVersion) -> ActionVersion | None:
    """The version new requests pinned before ``version`` is published (the newest published)."""
    stmt = select(ActionVersion).where(
        ActionVersion.organization_id == version.organization_id,
        ActionVersion.action_id == version.action_id,
        ActionVersion.status == PUBLISHED,
    )
    return session.exec(stmt.order_by(col(ActionVersion.number).desc())).first()


def delete_action(engine: Engine, org_id: str, action_id: str, *, actor: str) -> None:
    """Delete an action and all its versions, unless something pins it (CONTRACT 6), with
    ``ACTION_DELETED`` naming ``actor`` (its name and the digests of its published versions, so
    the trail still says what it was)."""
    key = audit.signer(engine)
    with write_session(engine) as session:
        action = session.exec(
            select(Action).where(Action.organization_id == org_id, Action.id == action_id).with_for_update()
        ).first()
        if action is None:
            raise NotFound(f"action {action_id} not found")
        if _in_use(session, org_id, action_id):
            raise ActionRefused(
                f"action {action_id} is referenced by credentials or mandates and cannot be deleted"
            )
        versions = session.exec(
            select(ActionVersion).where(
                col(ActionVersion.organization_id) == org_id, col(ActionVersion.action_id) == action_id
            )
        ).all()
        published = sorted(v.digest_sri for v in versions if v.digest_sri)
        data = {"actionId": action_id, "name": action.name, "versions": len(versions), "published": published}
        session.exec(
            delete(ActionVersion).where(
                col(ActionVersion.organization_id) == org_id, col(ActionVersion.action_id) == action_id
            )
        )
        session.delete(action)
        session.flush()
        entry = audit.Entry(audit.ACTION_DELETED, org_id, actor=actor, data=data)
        audit.append(session.connection(), key, entry)


def _in_use(session: Session, org_id: str, action_id: str) -> bool:
    """Whether a credential of the organization names the action (any version, any status).

    POST /request stores the pinned version in the credential's ``action`` JSON, so a request
    still awaiting its decision already pins the action. The JSON is matched as text: the URN
    (a UUID, no LIKE wildcards) in quotes appears only as a value. Issued mandates are the same
    ``credential`` rows, so this covers them too.
    """
    return session.exec(_naming(org_id, action_id, Credential.id).limit(1)).first() is not None


def _naming(org_id: str, urn_value: str, what: Any) -> Any:
    """A select of ``what`` over the organization's credentials whose ``action`` names ``urn_value``."""
    return (
        select(what)
        .select_from(Credential)
        .join(CredentialRequest, col(CredentialRequest.id) == col(Credential.request_id))
        .where(
            CredentialRequest.organization_id == org_id,
            cast(col(Credential.action), String).like(f'%"{urn_value}"%'),
        )
    )


def _new_version(session: Session, action: Action, spec: ActionSpec, number: int) -> ActionVersion:
    version = ActionVersion(
        id=urn("action-version"),
        organization_id=action.organization_id,
        action_id=action.id,
        number=number,
        status=DRAFT,
        content=canonical_content(spec),
        created_at=utcnow(),
    )
    session.add(version)
    return version


def _locked_version(session: Session, version_id: str, org_id: str | None) -> ActionVersion:
    stmt = select(ActionVersion).where(ActionVersion.id == version_id)
    if org_id is not None:
        stmt = stmt.where(ActionVersion.organization_id == org_id)
    version = session.exec(stmt.with_for_update()).first()
    if version is None:
        raise NotFound(f"action version {version_id} not found")
    return version


# --- reading --------------------------------------------------------------------------------------


def organizations_with_action(engine: Engine, action_id: str) -> list[str]:
    """The organizations holding an action under this URN (usually one; see ``create_action``)."""
    with read_session(engine) as session:
        return list(session.exec(select(Action.organization_id).where(Action.id == action_id)))


def newest_draft(engine: Engine, org_id: str, action_id: str) -> ActionVersion | None:
    with read_session(engine) as session:
        return session.exec(
            select(ActionVersion)
            .where(
                ActionVersion.organization_id == org_id,
                ActionVersion.action_id == action_id,
                ActionVersion.status == DRAFT,
            )
            .order_by(col(ActionVersion.number).desc())
        ).first()


def version_by_number(engine: Engine, org_id: str, action_id: str, number: int) -> ActionVersion | None:
    """Version ``number`` of one of the organization's actions, or None (another organization's too)."""
    with read_session(engine) as session:
        return session.exec(
            select(ActionVersion).where(
                ActionVersion.organization_id == org_id,
                ActionVersion.action_id == action_id,
                ActionVersion.number == number,
            )
        ).first()


@dataclass(frozen=True)
class Usage:
    """What pins an action: the credentials naming it (a request awaiting its decision pins it
    already, and any of them forbids deleting it) and, per version id, the mandates issued."""

    credentials: int
    mandates: dict[str, int]


def usage(engine: Engine, org_id: str, action_id: str) -> Usage:
    """How many credentials of the organization name the action, and how many mandates were issued
    against each of its versions. Matched as text like ``_in_use``: a URN in quotes appears in the
    stored ``action`` JSON only as a value (``id``, ``version``)."""
    with read_session(engine) as session:
        credentials = session.exec(_naming(org_id, action_id, func.count(col(Credential.id)))).one()
        version_ids = session.exec(
            select(ActionVersion.id).where(
                ActionVersion.organization_id == org_id, ActionVersion.action_id == action_id
            )
        ).all()
        mandates = {
            version_id: session.exec(
                _naming(org_id, version_id, func.count(col(Credential.id))).where(
                    col(Credential.mandate_id).is_not(None)
                )
            ).one()
            for version_id in version_ids
        }
    return Usage(credentials, mandates)


def get_version(engine: Engine, version_id: str) -> ActionVersion | None:
    with read_session(engine) as session:
        return session.get(ActionVersion, version_id)


def list_actions(engine: Engine, org_id: str, *, published_only: bool = True) -> list[ActionView]:
    """The organization's actions by creation; with ``published_only`` (the API), only actions with
    a published version, and only those versions: drafts are never shown."""
    with read_session(engine) as session:
        actions = list(
            session.exec(
                select(Action)
                .where(Action.organization_id == org_id)
                .order_by(col(Action.created_at), col(Action.id))
            )
        )
        stmt = select(ActionVersion).where(ActionVersion.organization_id == org_id)
        if published_only:
            stmt = stmt.where(ActionVersion.status == PUBLISHED)
        versions = list(session.exec(stmt.order_by(col(ActionVersion.number))))
    by_action: dict[str, list[ActionVersion]] = {}
    for v in versions:
        by_action.setdefault(v.action_id, []).append(v)
    return [
        ActionView(a, by_action.get(a.id, [])) for a in actions if by_action.get(a.id) or not published_only
    ]


def get_action(
    engine: Engine, org_id: str, action_id: str, *, published_only: bool = True
) -> ActionView | None:
    """One action of the organization, or None (also when only drafts exist and ``published_only``)."""
    with read_session(engine) as session:
        action = session.get(Action, (org_id, action_id))
        if action is None:
            return None
        stmt = select(ActionVersion).where(
            ActionVersion.organization_id == org_id, ActionVersion.action_id == action_id
        )
        if published_only:
            stmt = stmt.where(ActionVersion.status == PUBLISHED)
        versions = list(session.exec(stmt.order_by(col(ActionVersion.number))))
    if published_only and not versions:
        return None
    return ActionView(action, versions)


def resolve_for_request(
    engine: Engine, org_id: str, action_id: str
) -> tuple[ActionVersion, ActionSpec] | None:
    """The version POST /request pins: the organization's newest *published* version of the action
    (highest number), with its parsed spec; None when the action is unknown or has none published.

    Newest published, because an integrator names the action, not a version: publishing a new
    version changes what new requests pin, never what earlier requests or mandates pinned.
    """
    with read_session(engine) as session:
        version = session.exec(
            select(ActionVersion)
            .where(
                ActionVersion.organization_id == org_id,
                ActionVersion.action_id == action_id,
                ActionVersion.status == PUBLISHED,
            )
            .order_by(col(ActionVersion.number).desc())
        ).first()
    return None if version is None else (version, spec_of(version))


# Parsed specs of published versions, which never change: POST /request needs one per credential.
_SPEC_CACHE_MAX = 1024
_spec_cache: dict[str, ActionSpec] = {}
_spec_cache_lock = threading.Lock()


def spec_of(version: ActionVersion) -> ActionSpec:
    """The spec stored in a version (cached for published versions, which are immutable)."""
    cached = _spec_cache.get(version.id) if version.status == PUBLISHED else None
    if cached is not None:
        return cached
    spec, errors = parse_action_spec(dict(version.content))
    if spec is None:  # stored content was produced by canonical_content: a broken row, not input
        raise ActionRefused([f"stored content of {version.id} is invalid: {e}" for e in errors])
    if version.status == PUBLISHED:
        with _spec_cache_lock:
            if len(_spec_cache) >= _SPEC_CACHE_MAX:
                _spec_cache.clear()
            _spec_cache[version.id] = spec
    return spec


def content_fields(version: ActionVersion) -> dict[str, Any]:
    """The version's canonical content: what its digestSRI covers, shown as is."""
    return dict(version.content)


def pin_for_request(
    engine: Engine, org_id: str, action_id: str, user_params: dict[str, Any], *, where: str
) -> tuple[dict[str, Any] | None, list[str]]:
    """What a POLICY credential of POST /request stores as its ``action``: the action id, the pinned
    version and its digestSRI, and the userParams checked against the declared ones (names exactly,
    types; defaults fill omitted ones). Otherwise None and one message per problem, each starting
    with ``where`` (``credentials.0.action``)."""
    resolved = resolve_for_request(engine, org_id, action_id)
    if resolved is None:
        return None, [f"{where}.id: unknown or unpublished action {action_id}"]
    version, spec = resolved
    filled, problems = validate_values(
        spec.user_params, user_params, where=f"{where}.userParams", fill_defaults=True
    )
    if problems:
        return None, problems
    assert version.digest_sri is not None  # published
    return action_pin(action_id, version.id, version.digest_sri, filled), []


def bounds_for_pin(
    engine: Engine, pin: dict[str, Any], *, where: str
) -> tuple[list[dict[str, Any]] | None, list[str]]:
    """The pinned version's limits with each ``max`` read from the pin's userParams
    (``policy.limits.Bound`` as JSON; None when the version has none), or one message per limit
    whose user param does not hold a usable bound, each starting with ``where``."""
    version = get_version(engine, pin["version"])
    if version is None:
        return None, [f"{where}.id: unknown action version"]
    spec = spec_of(version)
    if not spec.limits:
        return None, []
    bounds, problems = resolve(spec.limits, pin.get("userParams") or {})
    if problems:
        return None, [f"{where}.userParams: {p}" for p in problems]
    return [b.as_json() for b in bounds], []


def install_published(
    engine: Engine, org_id: str, raw: dict[str, Any], *, action_id: str | None = None
) -> ActionVersion:
    """Create an action from its dict form (YAML/JSON) and publish version 1 at once; nothing is
    stored when the spec or a publish check fails (ActionRefused with every message). For the
    development organization, benchmarks and test fixtures: part of setting an organization up, so
    it writes no audit record, like the organization's creation."""
    spec, errors = parse_action_spec(raw)
    if spec is None or errors:
        raise ActionRefused(errors)
    errors = check_spec(spec)
    if errors:
        raise ActionRefused(errors)
    _, draft = create_action(engine, org_id, spec, action_id=action_id)
    return _publish(engine, draft.id, None, None)
