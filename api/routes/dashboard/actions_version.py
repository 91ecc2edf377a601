"""One version of an action: the editor of a draft (typed params, named CEL rules; "Check", "Save
the draft", "Try it", "Publish") and a published version, shown with its digestSRI, which no form
can change (a post that tries is refused, 409).

The editor works without JavaScript: each button posts the whole form and the page comes back with
every problem beside its param or rule. The page's script adds a check as one types: it posts the
form to ``.../check`` with the session's CSRF token in ``X-CSRF-Token`` and places the JSON answer
in the same spots (live regions, each named by its field's ``aria-describedby``). Both run
``services.action_drafts.check``, the checks publishing runs (a rule's cost at its params' bounds
included), on a thread, as publishing itself: they estimate and sample the rules, which must never
hold the event loop (``services.context.run_blocking`` runs on it with SQLite). "Try it" runs the
rules as a verification runs them (``services.action_drafts.try_rules``): within the step budget
of one verification, costly ones in an evaluation process in the organization's turn.
"""

from __future__ import annotations

import asyncio
from datetime import datetime
from functools import partial
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from api.deps import ContextDep
from api.errors import service_error_status
from api.routes.dashboard import actions_form as forms
from api.routes.dashboard import actions_limits
from api.routes.dashboard.actions_form import (
    ACTION_ROLES,
    NUMBER_RE,
    action_id_of,
    form_value,
    posted,
    said,
)
from api.routes.dashboard.common import form_by, member_page, not_found, org_of, signed_in, when
from core.kinds import ActionVersionStatus
from policy.actions import ActionSpec
from policy.cost import RULE_BUDGET
from policy.limits import KINDS, MAX_EXECUTIONS
from policy.params import (
    DEFAULT_MAX_ITEMS,
    DEFAULT_MAX_LENGTH,
    MAX_ITEMS_CEILING,
    MAX_LENGTH_CEILING,
    PARAM_TYPES,
)
from services import action_drafts as drafts
from services import actions, members
from services.context import Context, run_blocking, utcnow
from services.errors import Conflict, Invalid, NotFound, TooMany, Unavailable
from store.tables import Action, ActionVersion, Member

router = APIRouter()

NOTICES = {
    "created": "The action is created with an empty draft: declare its params and rules.",
    "published": "The version is published: it can no longer change, and new requests pin it.",
    "checked": "The draft is checked and saved.",
    "saved": "The draft is saved.",
}
NOT_KEPT = "The draft is checked but not saved: fix the problems shown beside each param or rule."
IMMUTABLE = "This version is published and can no longer change: add a new version to change the action."
NO_SUCH = "No such action version."
VERSION_PATH = "/dashboard/actions/{key}/versions/{number}"
# "Try it" when the rules could not run just now, in place of its results
NOT_NOW = {
    TooMany: "Your organization has many rules waiting to run just now: please try again in a second.",
    Unavailable: "The rules cannot be run just now: please try again in a moment.",
}


def _located(ctx: Context, member: Member, key: str, number: str) -> tuple[Action, ActionVersion] | None:
    """The member's organization's action and version of a path, None for anything else."""
    action_id = action_id_of(key)
    if action_id is None or not NUMBER_RE.fullmatch(number):
        return None
    try:
        return actions.version(ctx, members.actor_of(member), org_of(member), action_id, int(number))
    except NotFound:
        return None


def _version_html(
    ctx: Context,
    member: Member,
    token: str,
    action: Action,
    version: ActionVersion,
    *,
    status: int = 200,
    draft: forms.Draft | None = None,
    checked: drafts.Checked | None = None,
    tried: drafts.Tried | None = None,
    **extra: Any,
) -> HTMLResponse:
    """The version's page: the draft as typed (``draft``) or as stored, with its problems as
    ``checked`` (``_checked``: a draft's page is never shown unchecked)."""
    raw = draft.raw if draft is not None else dict(version.content)
    rows = draft.rows if draft is not None else forms.rows_of(raw)
    published = version.status == ActionVersionStatus.PUBLISHED
    assert published or checked is not None
    problems = (draft.problems if draft else []) + (checked.problems if checked else [])
    by_row, general = forms.placed_problems(problems)
    spec = checked.spec if checked is not None else None
    inputs = (
        forms.try_inputs(spec.execution_params, spec.user_params, draft.tries if draft else {})
        if spec
        else []
    )
    return member_page(
        ctx,
        member,
        token,
        "dashboard/actions_version.html",
        "actions",
        status=status,
        title=f"{action.name} version {version.number} · Actions · Mandatum",
        # render_page's: only a draft's page has the script, which posts to .../check
        connect_self=version.status == ActionVersionStatus.DRAFT,
        action=action,
        key=forms.key_of(action.id),
        version=version,
        published=published,
        published_at=when(version.published_at) if version.published_at else "",
        rows=rows,
        **_bounds_and_limits(raw, published),
        budget=f"{RULE_BUDGET:,}",
        by_row=by_row,
        general=general,
        types=PARAM_TYPES,
        max_rows=forms.MAX_ROWS,
        publishable=bool(checked and checked.publishable and not (draft and draft.problems)),
        allows_any=forms.allows_any_of(checked),
        try_inputs=inputs,
        try_now=(draft.tries.get("try-now", "") if draft else ""),
        tried=tried,
        **extra,
    )


def _bounds_and_limits(raw: dict[str, Any], published: bool) -> dict[str, Any]:
    """What the page says of the params' bounds and of the use limits: a published version's, in
    words, or the editor's choices, defaults and ceilings."""
    return {
        "bounds": forms.shown_bounds(raw) if published else {},
        "bound_types": {name: applies for name, (_, applies) in forms.BOUNDS.items()},
        "default_length": f"{DEFAULT_MAX_LENGTH:,}",
        "default_items": f"{DEFAULT_MAX_ITEMS:,}",
        "ceiling_length": f"{MAX_LENGTH_CEILING:,}",
        "ceiling_items": f"{MAX_ITEMS_CEILING:,}",
        "limits_shown": actions_limits.described(raw) if published else [],
        "kinds": KINDS,
        "periods": actions_limits.PERIOD_CHOICES,
        "limit_applies": actions_limits.APPLIES,
        "max_limits": actions_limits.MAX_LIMIT_ROWS,
        "max_executions": MAX_EXECUTIONS,
    }


@router.get(VERSION_PATH, response_class=HTMLResponse)
async def version_page(
    request: Request, ctx: ContextDep, key: str, number: str, notice: str | None = None
) -> Response:
    found = await signed_in(request, ctx, ACTION_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    located = await run_blocking(ctx, _located, ctx, member, key, number)
    if located is None:
        return not_found(NO_SUCH)
    action, version = located
    checked = None
    if version.status == ActionVersionStatus.DRAFT:
        checked = await _checked(ctx, member, dict(version.content))
    notice_text = NOTICES.get(notice or "")
    page = partial(_version_html, ctx, member, token, action, version, checked=checked, notice=notice_text)
    return await run_blocking(ctx, page)


async def _checked(ctx: Context, member: Member, raw: dict[str, Any]) -> drafts.Checked:
    """``services.action_drafts.check`` of a draft's dict form, on a thread of its own."""
    return await asyncio.to_thread(drafts.check, ctx, members.actor_of(member), raw)


@router.post(VERSION_PATH, response_class=HTMLResponse)
async def edit_version(request: Request, ctx: ContextDep, key: str, number: str) -> Response:
    form = await posted(request)
    found = await form_by(request, ctx, form_value(form, "csrf", 100), ACTION_ROLES)
    if isinstance(found, Response):
        return found
    member, token = found
    located = await run_blocking(ctx, _located, ctx, member, key, number)
    if located is None:
        return not_found(NO_SUCH)
    action, version = located
    page = partial(_version_html, ctx, member, token, action, version)
    if version.status == ActionVersionStatus.PUBLISHED:
        return await run_blocking(ctx, partial(page, status=409, error=IMMUTABLE))
    actor = members.actor_of(member)
    draft = forms.read_form(form, action.name, action.description)
    checked = await _checked(ctx, member, draft.raw)
    page = partial(page, draft=draft, checked=checked)
    do = form.get("do", "check")
    if do not in ("try", "save", "publish"):
        do = "check"  # the Check button, or the Enter key: checked, and kept when it reads
    spec = checked.spec
    if draft.problems or spec is None:  # a draft that cannot be read: neither tried nor saved
        if do == "check":
            return await run_blocking(ctx, partial(page, error=NOT_KEPT))
        what = "The rules did not run" if do == "try" else "The draft is not saved"
        error = f"{what}: fix the problems shown beside each param or rule."
        return await run_blocking(ctx, partial(page, status=400, error=error))
    if do == "try":
        return await _try_page(ctx, member, version, spec, draft.tries, page)
    org_id = org_of(member)
    try:
        await run_blocking(ctx, actions.save_draft, ctx, actor, org_id, version.id, spec)
        if do == "publish":  # its checks estimate and sample the rules: on a thread
            allow_any = form_value(form, "allow-any", 10) == "yes"
            await asyncio.to_thread(
                partial(actions.publish, ctx, actor, version.id, org_id, allow_any=allow_any)
            )
    except actions.AllowsAnyExecution as exc:  # saved, not published: the box says they mean it
        return await run_blocking(ctx, partial(page, status=400, error=str(exc)))
    except actions.PublishRefused as exc:
        error = "The version is not published: fix the problems shown beside each param or rule."
        refused = drafts.Checked(spec, drafts.placed(exc.problems, spec))
        return await run_blocking(ctx, partial(page, status=400, error=error, checked=refused))
    except Invalid as exc:
        return await run_blocking(ctx, partial(page, status=400, error=said(exc.message)))
    except Conflict:  # published meanwhile
        return await run_blocking(ctx, partial(page, status=409, error=IMMUTABLE))
    except NotFound:
        return not_found(NO_SUCH)
    # post, redirect, get: a reload shows the stored draft and repeats nothing
    notice = {"publish": "published", "check": "checked"}.get(do, "saved")
    return RedirectResponse(f"{VERSION_PATH.format(key=key, number=version.number)}?notice={notice}", 303)


async def _try_page(
    ctx: Context,
    member: Member,
    version: ActionVersion,
    spec: ActionSpec,
    tries: dict[str, str],
    page: partial[HTMLResponse],
) -> Response:
    """The page with the rules of the draft as typed run on the "Try it" values; when they cannot
    run just now (too many of the organization's rules wait, 429), a request to try again, in
    place of the results."""
    try:
        tried = await _tried(ctx, member, version, spec, tries)
    except ValueError as exc:  # the moment itself is refused (wire.dates): no rule ran
        return await run_blocking(ctx, partial(page, status=400, tried=drafts.Tried([], [str(exc)])))
    except (TooMany, Unavailable) as exc:
        shown = await run_blocking(
            ctx, partial(page, status=service_error_status(exc), not_now=NOT_NOW[type(exc)])
        )
        shown.headers["Retry-After"] = str(exc.retry_after or 1)
        return shown
    return await run_blocking(ctx, partial(page, tried=tried))


async def _tried(
    ctx: Context, member: Member, version: ActionVersion, spec: ActionSpec, tries: dict[str, str]
) -> drafts.Tried:
    """The rules of the draft as typed, run on the "Try it" values (read on a thread: an array's
    JSON may be long)."""
    read = await asyncio.to_thread(_try_values, spec, tries)
    if isinstance(read, drafts.Tried):
        return read
    execution, user, now = read
    actor = members.actor_of(member)
    return await drafts.try_rules(ctx, actor, org_of(member), spec, version.id, execution, user, now)


def _try_values(
    spec: ActionSpec, tries: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any], datetime] | drafts.Tried:
    """The typed "Try it" values and moment, or the problems that keep the rules from running."""
    inputs = forms.try_inputs(spec.execution_params, spec.user_params, tries)
    now = forms.try_now(tries.get("try-now", ""), utcnow())  # ValueError: the moment is refused
    problems = forms.too_long(inputs)
    if problems:
        return drafts.Tried([], problems)
    execution, user = forms.try_values(inputs)
    return execution, user, now


@router.post(VERSION_PATH + "/check")
async def check_as_you_type(request: Request, ctx: ContextDep, key: str, number: str) -> Response:
    """The editor's problems as JSON, by the id of the row in the page as sent (``r-0``)."""
    found = await form_by(request, ctx, request.headers.get("x-csrf-token", "")[:100], ACTION_ROLES)
    if isinstance(found, Response):
        return found
    member, _ = found
    located = await run_blocking(ctx, _located, ctx, member, key, number)
    if located is None:
        return JSONResponse({"problems": {}, "general": [NO_SUCH], "publishable": False}, status_code=404)
    action, version = located
    if version.status == ActionVersionStatus.PUBLISHED:
        return JSONResponse({"problems": {}, "general": [IMMUTABLE], "publishable": False}, status_code=409)
    draft = forms.read_form(await posted(request), action.name, action.description)
    checked = await _checked(ctx, member, draft.raw)
    return JSONResponse(forms.check_answer(draft, checked))
