"""The organization's settings in the dashboard: owners and developers set the frame origins, the VP
lifetime and the API version pin, each change recorded as theirs and only what changed; a bad
value is refused with its name and nothing is saved; support members are refused the page and
the form; the form needs the session's CSRF token."""

from __future__ import annotations

import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from core.kinds import MemberRole
from services.context import Context
from store import audit, orgs
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.dashboard import log_in_as, page_client
from wire.versioning import VERSIONS


def _changes(engine: Engine, org_id: str) -> list[tuple[str | None, str, object]]:
    return [
        (r.actor, r.data["setting"], r.data["value"])
        for r in chain(engine, org_id)
        if r.type == audit.SETTINGS_CHANGED
    ]


async def test_a_developer_saves_the_settings_and_each_change_is_theirs(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    org_id = org.organization_id
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "settings")
        page = await browser.get("/dashboard/settings")
        assert page.status_code == 200 and 'name="minutes"' in page.text
        form = {
            "csrf": csrf,
            "origins": " https://app.example.com \n\nhttps://APP.example.com\nhttps://shop.example.com:8443",
            "minutes": "12",
            "version": VERSIONS[-1],
        }
        saved = await browser.post("/dashboard/settings", data=form)
        assert (saved.status_code, saved.headers["location"]) == (303, "/dashboard/settings?notice=saved")
        shown = (await browser.get(saved.headers["location"])).text
        assert "The settings are saved." in shown and "https://shop.example.com:8443" in shown
        again = await browser.post("/dashboard/settings", data=form)  # nothing changed: nothing recorded
        assert again.status_code == 303
    org_row = orgs.get_organization(engine, org_id)
    assert org_row.frame_origins == ["https://app.example.com", "https://shop.example.com:8443"]
    assert (org_row.presentation_minutes, org_row.api_version) == (12, VERSIONS[-1])
    actor = f"member:{member_id}"
    assert _changes(engine, org_id) == [
        (actor, "frameOrigins", ["https://app.example.com", "https://shop.example.com:8443"]),
        (actor, "presentationMinutes", 12),
        (actor, "apiVersion", VERSIONS[-1]),
    ]


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"origins": "https://app.example.com/path"}, "is not an HTTPS origin"),
        ({"origins": "http://app.example.com"}, "is not an HTTPS origin"),
        ({"origins": "\n".join(f"https://a{i}.example.com" for i in range(11))}, "at most 10 origins"),
        ({"minutes": "0"}, "whole number of minutes from 1 to 60"),
        ({"minutes": "61"}, "whole number of minutes from 1 to 60"),
        ({"minutes": "5.5"}, "whole number of minutes from 1 to 60"),
        ({"minutes": "\u0665"}, "whole number of minutes from 1 to 60"),  # an Arabic-Indic five
        ({"version": "2020-01-01"}, "the API version is one of"),
    ],
)
async def test_a_bad_value_is_refused_by_name_and_nothing_is_saved(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, change: dict[str, str], why: str
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "bad-settings")
        form = {"csrf": csrf, "origins": "https://ok.example.com", "minutes": "9", "version": "", **change}
        refused = await browser.post("/dashboard/settings", data=form)
        assert refused.status_code == 400 and why in refused.text, refused.text[-1500:]
    org_row = orgs.get_organization(engine, org.organization_id)
    assert (org_row.frame_origins or [], org_row.presentation_minutes) == ([], 5)
    assert _changes(engine, org.organization_id) == []


async def test_support_is_refused_and_the_form_needs_the_token(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    form = {"origins": "https://evil.example.com", "minutes": "60", "version": ""}
    async with page_client(app) as support, page_client(app) as developer:
        _, csrf = await log_in_as(support, ctx, org, MemberRole.SUPPORT, "support-settings")
        assert (await support.get("/dashboard/settings")).status_code == 403
        assert (await support.post("/dashboard/settings", data={**form, "csrf": csrf})).status_code == 403
        await log_in_as(developer, ctx, org, MemberRole.DEVELOPER, "csrf-settings")
        stale = await developer.post("/dashboard/settings", data={**form, "csrf": csrf})  # not its token
        assert stale.status_code == 403 and "This form has expired" in stale.text
    assert _changes(engine, org.organization_id) == []


async def test_an_owner_turns_the_portal_off_and_a_developer_cannot(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    org_id = org.organization_id
    async with page_client(app) as owner, page_client(app) as developer:
        owner_id, csrf = await log_in_as(owner, ctx, org, MemberRole.OWNER, "portal-owner")
        _, dev_csrf = await log_in_as(developer, ctx, org, MemberRole.DEVELOPER, "portal-dev")
        page = (await owner.get("/dashboard/settings")).text
        assert "The subject's portal" in page and "Turn the portal off" in page
        assert (await owner.post("/dashboard/settings/portal", data={"enabled": "no"})).status_code == 403
        refused = await developer.post("/dashboard/settings/portal", data={"csrf": dev_csrf, "enabled": "no"})
        assert refused.status_code == 403 and orgs.get_organization(engine, org_id).portal_enabled
        done = await owner.post("/dashboard/settings/portal", data={"csrf": csrf, "enabled": "no"})
        assert (done.status_code, done.headers["location"]) == (303, "/dashboard/settings?notice=portal-off")
        assert "Turn the portal on" in (await owner.get(done.headers["location"])).text
        assert (
            await owner.post("/dashboard/settings/portal", data={"csrf": csrf, "enabled": "x"})
        ).status_code == 400
    assert not orgs.get_organization(engine, org_id).portal_enabled
    assert _changes(engine, org_id)[-1] == (f"member:{owner_id}", "portalEnabled", False)
