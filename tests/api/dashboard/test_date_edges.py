"""Dates at the edges in the dashboard (issue 30, item 4), through the real app with a logged-in
member: the requests and activity lists' filters and the actions editor's "now" answer the page
(200) or the page with the field named (400), never a 500; what the lists' ``dateTo`` of
9999-12-31 means is the end of time, as in the API."""

from __future__ import annotations

import html
import re

import pytest
from fastapi import FastAPI

from core.kinds import MemberRole
from services.context import Context
from tests.support.api_client import Credentials
from tests.support.dashboard import log_in_as, page_client

pytestmark = pytest.mark.usefixtures("no_server_errors")

LISTS = ["/dashboard/requests", "/dashboard/activity"]


@pytest.mark.parametrize("path", LISTS)
async def test_the_last_day_of_the_calendar_ends_a_list(
    app: FastAPI, ctx: Context, org: Credentials, path: str
) -> None:
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "dates")
        shown = await browser.get(path, params={"dateFrom": "2026-01-01", "dateTo": "9999-12-31"})
    assert shown.status_code == 200, shown.text[-1500:]
    assert 'value="9999-12-31"' in shown.text  # the filter it applied, kept in the form


@pytest.mark.parametrize("path", LISTS)
@pytest.mark.parametrize(
    ("params", "why"),
    [
        ({"dateFrom": "0001-01-01T00:00:00+14:00"}, "dateFrom is out of range"),
        ({"dateFrom": "0001-01-01T00:00:00+00:01", "dateTo": "2026-01-01"}, "dateFrom is out of range"),
        ({"dateFrom": "2026-01-01", "dateTo": "9999-12-31T23:59:59.999999-14:00"}, "dateTo is out of range"),
        ({"dateFrom": "2026-01-01", "dateTo": "9999-12-31T23:00-0100"}, "dateTo is out of range"),
    ],
)
async def test_a_filter_an_offset_takes_out_of_the_calendar_is_a_400_naming_it(
    app: FastAPI, ctx: Context, org: Credentials, path: str, params: dict[str, str], why: str
) -> None:
    async with page_client(app) as browser:
        await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "dates")
        refused = await browser.get(path, params=params)
    assert refused.status_code == 400 and refused.headers["content-type"].startswith("text/html")
    assert why + ": in UTC it must fall between 0001-01-01 and 9999-12-31" in html.unescape(refused.text)
    assert 'role="alert"' in refused.text


def _editor(csrf: str, now: str) -> dict[str, str]:
    """The version editor's form: one number param and one rule that reads ``now``, tried at ``now``."""
    return {
        "csrf": csrf,
        "do": "try",
        "e-0-name": "amount",
        "e-0-type": "number",
        "r-0-name": "afterLaunch",
        "r-0-expression": "now > timestamp('2026-01-01T00:00:00Z')",
        "r-0-description": "",
        "try-e-amount": "1",
        "try-now": now,
    }


def _results(page: str) -> dict[str, str]:
    rows = re.findall(
        r'<td data-label="Rule">(.*?)</td>\s*<td data-label="Result" class="result-\w+">(\w+)</td>', page
    )
    return dict(rows)


async def test_the_editors_now_out_of_the_calendar_is_a_400_and_no_rule_runs(
    app: FastAPI, ctx: Context, org: Credentials
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "editor")
        created = await browser.post(
            "/dashboard/actions", data={"csrf": csrf, "name": "Launch", "description": ""}
        )
        assert created.status_code == 303, created.text
        path = created.headers["location"].split("?", 1)[0]
        late = await browser.post(path, data=_editor(csrf, "9999-12-31T23:59:59.999999-14:00"))
        early = await browser.post(path, data=_editor(csrf, "0001-01-01T00:00:00+00:01"))
        fine = await browser.post(path, data=_editor(csrf, "9999-12-31T23:59:59Z"))
    for refused in (late, early):
        assert refused.status_code == 400, refused.text[-1500:]
        assert "now is out of range: in UTC it must fall between" in html.unescape(refused.text)
        assert _results(refused.text) == {}
    assert fine.status_code == 200 and _results(fine.text) == {"afterLaunch": "true"}
