"""``mandatum action``: actions from YAML or JSON files, until the dashboard exists.

Every change goes through ``services.actions`` as the operator running the command, the same
functions the dashboard calls.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from cli.common import JsonOpt, command_context, echo, emit, fail, operator
from services import orgs as organizations
from services.context import Context
from services.errors import ServiceError

if TYPE_CHECKING:
    from types import ModuleType

    from policy.actions import ActionSpec

action_app = typer.Typer(
    help="Actions: create from a YAML or JSON file, add versions, publish, list.", no_args_is_help=True
)

FileOpt = Annotated[Path, typer.Option("--file", help="The action, as YAML (.yaml, .yml) or JSON.")]
PublishOpt = Annotated[bool, typer.Option("--publish", help="Publish the new version at once.")]
AllowAnyOpt = Annotated[
    bool,
    typer.Option(
        "--allow-any-execution",
        help="Publish a version without rules or use limits: its mandates allow any execution.",
    ),
]


class _NoTimestampLoader(yaml.SafeLoader):
    """YAML without implicit dates: a timestamp default stays the RFC 3339 text that was written."""


_NoTimestampLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def _read_spec(path: Path) -> ActionSpec:
    """The action spec in a file, or exit 1 naming the file and every problem found."""
    suffix = path.suffix.lower()
    if suffix not in {".yaml", ".yml", ".json"}:
        fail(f"{path}: use a .yaml, .yml or .json file")
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        fail(f"{path}: file not found")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"{path}: cannot be read: {exc}")
    raw: Any
    try:
        raw = json.loads(text) if suffix == ".json" else yaml.load(text, Loader=_NoTimestampLoader)  # noqa: S506
    except json.JSONDecodeError as exc:
        fail(f"{path}: JSON syntax error at line {exc.lineno}, column {exc.colno}: {exc.msg}")
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        fail(f"{path}: YAML syntax error{where}: {problem}")
    if not isinstance(raw, dict):
        fail(f"{path}: the action must be a mapping with name, executionParams, userParams, rules, limits")
    from policy.actions import parse_action_spec

    spec, errors = parse_action_spec(raw)
    if spec is None or errors:
        fail(f"{path}: the action is not valid:\n" + "\n".join(f"  - {e}" for e in errors))
    return spec


def _checked_for_publish(spec: ActionSpec, path: Path, allow_any: bool) -> None:
    """With --publish, the publish checks run before anything is stored: a failure creates nothing."""
    from policy.actions import check_spec

    errors = check_spec(spec)
    if errors:
        fail(f"{path}: cannot publish:\n" + "\n".join(f"  - {e}" for e in errors))
    if _services().allows_any(spec) and not allow_any:
        fail(f"{path}: {_services().ALLOWS_ANY} (--allow-any-execution)")


def _action_org(ctx: Context, action_id: str, org: str | None) -> str:
    """The organization of an action: --org, or the only one holding that URN."""
    if org is not None:
        return org
    holders = _services().organizations_with_action(ctx, action_id)
    if not holders:
        fail(f"action {action_id} not found")
    if len(holders) > 1:
        fail(f"action {action_id} exists in several organizations: pass --org")
    return holders[0]


def _version_row(version: Any) -> dict[str, object]:
    return {
        "actionId": version.action_id,
        "versionId": version.id,
        "number": version.number,
        "status": version.status,
        "digestSRI": version.digest_sri,
        "publishedAt": version.published_at and version.published_at.isoformat(),
    }


def _services() -> ModuleType:
    """``services.actions``, imported on first use: with the CEL runtime it is the slowest part of
    starting ``mandatum``, which every other command does without."""
    import services.actions

    return services.actions


def _publish(ctx: Context, version_id: str, org: str | None = None, allow_any: bool = False) -> Any:
    try:
        return _services().publish(ctx, operator(), version_id, org, allow_any=allow_any)
    except _services().AllowsAnyExecution as exc:
        fail(f"{exc} (--allow-any-execution)")
    except _services().PublishRefused as exc:
        fail("cannot publish:\n" + "\n".join(f"  - {m}" for m in exc.problems))
    except ServiceError as exc:
        fail(str(exc))


@action_app.command("create")
def action_create(
    org: Annotated[str, typer.Option("--org", help="Organization id.")],
    file: FileOpt,
    action_id: Annotated[
        str | None,
        typer.Option(
            "--id", help="Install under this URN (e.g. the same action as in another organization)."
        ),
    ] = None,
    publish: PublishOpt = False,
    allow_any: AllowAnyOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Create an action from a file, as draft version 1."""
    ctx = command_context()
    spec = _read_spec(file)
    if publish:
        _checked_for_publish(spec, file, allow_any)
    try:
        _, version = _services().create(ctx, operator(), org, spec, action_id)
    except ServiceError as exc:
        fail(str(exc))
    if publish:
        version = _publish(ctx, version.id, allow_any=allow_any)
    emit(_version_row(version), as_json, f"Action created ({version.status} version 1).")


@action_app.command("add-version")
def action_add_version(
    action_id: Annotated[str, typer.Option("--action", help="Action URN.")],
    file: FileOpt,
    org: Annotated[str | None, typer.Option("--org", help="Organization id.")] = None,
    publish: PublishOpt = False,
    allow_any: AllowAnyOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Add the next numbered draft version of an action from a file."""
    ctx = command_context()
    spec = _read_spec(file)
    if publish:
        _checked_for_publish(spec, file, allow_any)
    org_id = _action_org(ctx, action_id, org)
    try:
        version = _services().add_version(ctx, operator(), org_id, action_id, spec)
    except ServiceError as exc:
        fail(str(exc))
    if publish:
        version = _publish(ctx, version.id, allow_any=allow_any)
    emit(_version_row(version), as_json, f"Version {version.number} added ({version.status}).")


@action_app.command("publish")
def action_publish(
    version_id: Annotated[str | None, typer.Option("--version", help="Version URN.")] = None,
    action_id: Annotated[
        str | None, typer.Option("--action", help="Action URN: publish its newest draft.")
    ] = None,
    org: Annotated[str | None, typer.Option("--org", help="Organization id.")] = None,
    allow_any: AllowAnyOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Publish a draft: the publish checks run, its digestSRI is fixed, and it becomes immutable."""
    ctx = command_context()
    if (version_id is None) == (action_id is None):
        fail("give exactly one of --version or --action")
    if action_id is not None:
        org = _action_org(ctx, action_id, org)
        draft = _services().newest_draft(ctx, org, action_id)
        if draft is None:
            fail(f"action {action_id} has no draft version to publish")
        version_id = draft.id
    assert version_id is not None
    version = _publish(ctx, version_id, org, allow_any)
    emit(_version_row(version), as_json, f"Version {version.number} published.")


@action_app.command("list")
def action_list(
    org: Annotated[str, typer.Option("--org", help="Organization id.")], as_json: JsonOpt = False
) -> None:
    """List an organization's actions with all their versions, drafts included."""
    ctx = command_context()
    try:
        organizations.get_organization(ctx, org)
    except ServiceError as exc:
        fail(str(exc))
    views = _services().list_actions(ctx, org, published_only=False)
    if as_json:
        typer.echo(
            json.dumps(
                [
                    {
                        "actionId": v.action.id,
                        "name": v.action.name,
                        "description": v.action.description,
                        "versions": [_version_row(x) for x in v.versions],
                    }
                    for v in views
                ],
                indent=2,
            )
        )
        return
    for v in views:
        echo(f"{v.action.id}  {v.action.name}")
        for x in v.versions:
            typer.echo(f"  v{x.number}  {x.status:<9}  {x.id}  {x.digest_sri or ''}")
