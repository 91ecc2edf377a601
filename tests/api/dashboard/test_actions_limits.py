"""The action editor's use limits (issue 31, item 8): a limit row per limit beside the params and
rules (the kind and the period as selects), typed, stored, shown back, removed by clearing it; each
limit's problems beside its row by "Check", by the script's JSON check and by a refused publish
(an unknown or non-numeric param, a bad period, a userParams max naming an unknown or non-numeric
param, a name declared twice, the reserved maxExecutions); and a published version's limits read
only, in words."""

from __future__ import annotations

import html
import re
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine

from core.kinds import MemberRole
from core.text import text_problem
from policy.limits import Limit
from services.context import Context
from store import actions as store
from tests.support.action_editor import create, followed, problems_of
from tests.support.api_client import Credentials
from tests.support.dashboard import log_in_as, page_client

pytestmark = pytest.mark.usefixtures("no_server_errors")
MONTHLY = {
    "name": "monthly",
    "kind": "sum",
    "max": "userParams.monthlyLimit",
    "param": "amount",
    "period": "P1M",
    "unit": "EUR",
}
PERIOD_CHOICE = "period must be one of P1D, P1W, P1M, or absent for the mandate's life"


def form(csrf: str, do: str, limits: list[dict[str, str]], **fields: str) -> dict[str, str]:
    """The editor's form of a payment action: executionParams ``amount`` (number) and ``payee``
    (string), userParams ``monthlyLimit`` (number) and ``label`` (string, default "rent"), one rule,
    ``limits`` as rows (a missing field as the page sends it blank), then a blank limit row."""
    sent = {
        "csrf": csrf,
        "do": do,
        "e-0-name": "amount",
        "e-0-type": "number",
        "e-1-name": "payee",
        "e-1-type": "string",
        "u-0-name": "monthlyLimit",
        "u-0-type": "number",
        "u-1-name": "label",
        "u-1-type": "string",
        "u-1-default": "rent",
        "r-0-name": "positive",
        "r-0-expression": "executionParams.amount > 0",
    }
    blank = {
        "name": "",
        "kind": "executions",
        "max": "",
        "param": "",
        "period": "",
        "unit": "",
        "description": "",
    }
    for i, row in enumerate([*limits, {}]):
        sent |= {f"l-{i}-{key}": row.get(key, value) for key, value in blank.items()}
    return sent | fields


def field_value(page: str, field: str) -> str:
    found = re.search(rf'id="{field}" name="{field}" value="([^"]*)"', page)
    assert found, f"no field {field}"
    return html.unescape(found.group(1))


def selected(page: str, field: str) -> str:
    """The value of the option a select shows as chosen."""
    found = re.search(rf'<select id="{field}".*?</select>', page, re.DOTALL)
    assert found, f"no select {field}"
    option = re.search(r'<option(?: value="([^"]*)")? selected>([^<]*)</option>', found.group(0))
    assert option, f"nothing selected in {field}"
    return html.unescape(option.group(1) if option.group(1) is not None else option.group(2))


def limits_in_words(page: str) -> list[str]:
    """A published version's limits as its page lists them, the description after a " | "."""
    found = re.search(r'<ul class="limits">(.*?)</ul>', page, re.DOTALL)
    assert found, "no limits listed"
    items = re.findall(r"<li>(.*?)</li>", found.group(1), re.DOTALL)
    texts = [re.sub(r"<[^>]+>", "", item.replace("<br>", " | ")) for item in items]
    return [re.sub(r"\s+", " ", html.unescape(text)).strip() for text in texts]


@dataclass
class Editor:
    browser: httpx.AsyncClient
    csrf: str
    key: str

    @property
    def path(self) -> str:
        return f"/dashboard/actions/{self.key}/versions/1"

    async def post(self, do: str, limits: list[dict[str, str]], **fields: str) -> httpx.Response:
        return await followed(
            self.browser, await self.browser.post(self.path, data=form(self.csrf, do, limits, **fields))
        )

    async def check(self, limits: list[dict[str, str]], **fields: str) -> dict[str, Any]:
        """The script's check: the problems as JSON."""
        answer = await self.browser.post(
            f"{self.path}/check",
            data=form(self.csrf, "check", limits, **fields),
            headers={"X-CSRF-Token": self.csrf},
        )
        assert answer.status_code == 200, answer.text
        found: dict[str, Any] = answer.json()
        return found


@pytest_asyncio.fixture
async def editor(app: FastAPI, ctx: Context, org: Credentials) -> AsyncIterator[Editor]:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "limits")
        yield Editor(browser, csrf, await create(browser, csrf, "Pay suppliers"))


def stored_limits(engine: Engine, org: Credentials, key: str) -> list[Limit]:
    found = store.version_by_number(engine, org.organization_id, f"urn:via:action:{key}", 1)
    assert found is not None
    return store.spec_of(found).limits


async def test_limits_are_typed_stored_shown_back_and_published_in_words(
    editor: Editor, org: Credentials, engine: Engine
) -> None:
    blank = (await editor.browser.get(editor.path)).text
    assert field_value(blank, "l-0-name") == "" and selected(blank, "l-0-kind") == "executions"
    assert selected(blank, "l-0-period") == ""  # the mandate's life
    assert 'aria-describedby="l-max-hint l-0-problems"' in blank
    assert 'data-applies="sum" aria-describedby="l-hint l-0-problems"' in blank  # param and unit
    assert 'data-applies="sum rate"' in blank  # period
    assert "Periods are calendar periods in UTC" in re.sub(r"\s+", " ", blank)

    limits = [
        {"name": "uses", "max": "5", "description": "Five payments in all"},
        {"name": "", "kind": "rate", "period": "P1D"},  # selects alone: no row, dropped
        MONTHLY,
        {"name": "weekly", "kind": "rate", "max": "3", "period": "P1W"},
        {"name": "total", "kind": "sum", "max": "12500.5", "param": "amount"},
    ]
    saved = await editor.post("save", limits)
    assert saved.status_code == 200 and "The draft is saved." in saved.text, saved.text
    assert stored_limits(engine, org, editor.key) == [
        Limit("uses", "executions", 5, description="Five payments in all"),
        Limit("monthly", "sum", "userParams.monthlyLimit", "amount", "P1M", "EUR"),
        Limit("weekly", "rate", 3, period="P1W"),
        Limit("total", "sum", 12500.5, "amount"),
    ]
    shown = (await editor.browser.get(editor.path)).text  # the stored draft, as rows
    assert [field_value(shown, f"l-{i}-name") for i in range(5)] == ["uses", "monthly", "weekly", "total", ""]
    assert (field_value(shown, "l-1-max"), field_value(shown, "l-1-param")) == (
        "userParams.monthlyLimit",
        "amount",
    )
    assert (selected(shown, "l-1-kind"), selected(shown, "l-1-period")) == ("sum", "P1M")
    assert (field_value(shown, "l-1-unit"), field_value(shown, "l-3-max")) == ("EUR", "12500.5")
    assert selected(shown, "l-2-period") == "P1W" and selected(shown, "l-0-period") == ""
    assert "No problems: ready to publish." in shown

    # clearing a row removes the limit
    cleared = await editor.post("save", [limits[0], MONTHLY, limits[3], {"kind": "sum", "period": "P1M"}])
    assert cleared.status_code == 200, cleared.text
    assert [limit.name for limit in stored_limits(engine, org, editor.key)] == ["uses", "monthly", "weekly"]

    published = await editor.post("publish", [limits[0], MONTHLY, limits[3], limits[4]])
    assert published.status_code == 303, published.text
    page = (await editor.browser.get(editor.path)).text
    assert 'name="l-0-name"' not in page and "<select" not in page
    assert limits_in_words(page) == [
        "uses: at most 5 executions over the mandate's life | Five payments in all",
        "monthly: sum of amount at most userParams.monthlyLimit EUR per calendar month (UTC)",
        "weekly: at most 3 executions per week (UTC, from Monday)",
        "total: sum of amount at most 12,500.5 over the mandate's life",
    ]
    assert "<code>maxExecutions</code>, when it sets one, is one more executions" in page


async def test_a_version_without_limits_says_so(editor: Editor) -> None:
    published = await editor.post("publish", [], **{"allow-any": "yes"})  # nor rules: any execution
    assert published.status_code == 303, published.text
    page = re.sub(r"\s+", " ", (await editor.browser.get(editor.path)).text)
    assert '<h2 id="limits-heading">Limits</h2>' in page and '<ul class="limits">' not in page
    assert "None: a mandate's use is bounded only by its request's <code>maxExecutions</code>" in page


async def test_each_limit_problem_is_shown_beside_its_row(editor: Editor) -> None:
    """Problems of a limit's shape (a bad period, a name twice, the reserved name) keep the draft
    from parsing; the params the other limits name are still checked, each beside its row."""
    shapeless = [
        {"name": "total", "kind": "sum", "max": "100", "param": "amont"},
        {"name": "byPayee", "kind": "sum", "max": "100", "param": "payee"},
        {"name": "daily", "kind": "rate", "max": "2", "period": "P1Y"},
        {"name": "capped", "kind": "sum", "max": "userParams.cap", "param": "amount"},
        {"name": "labelled", "kind": "rate", "max": "userParams.label", "period": "P1W"},
        {"name": "total", "max": "1"},
        {"name": "maxExecutions", "max": "3"},
        {"name": "rated", "kind": "rate", "max": "many"},
    ]
    expected = {
        "l-0": ["executionParams has no param amont"],
        "l-1": ["executionParams.payee is a string; a sum needs a number"],
        "l-2": [PERIOD_CHOICE],
        "l-3": ["userParams has no param cap"],
        "l-4": ["userParams.label is a string; a max needs a number"],
        "l-5": ["name total is declared twice"],
        "l-6": ["name maxExecutions is the request's own bound: choose another name"],
        "l-7": [
            "max must be a number or userParams.<name>",
            "period is required for a rate limit (P1D, P1W, P1M)",
        ],
    }
    answer = await editor.check(shapeless)
    assert answer == {"problems": expected, "general": [], "publishable": False, "allowsAny": False}
    checked = await editor.post("check", shapeless)
    assert checked.status_code == 200
    for row, problems in expected.items():
        assert problems_of(checked.text, row) == problems, row
    assert 'id="l-2-period" name="l-2-period"' in checked.text
    assert re.search(
        r'id="l-2-period"[^>]*aria-describedby="l-hint l-2-problems" aria-invalid="true"', checked.text
    )
    refused = await editor.post("save", shapeless)
    assert refused.status_code == 400 and "The draft is not saved" in refused.text

    # the shapes right, what publishing checks against the params, by the rows as sent (a blank
    # row in between is dropped before checking)
    named = [shapeless[0], {}, shapeless[1], shapeless[3], shapeless[4]]
    answer = await editor.check(named)
    assert answer["problems"] == {
        "l-0": expected["l-0"],
        "l-2": expected["l-1"],
        "l-3": expected["l-3"],
        "l-4": expected["l-4"],
    }
    assert answer["general"] == [] and answer["publishable"] is False
    kept = await editor.post("save", named)  # a draft may hold them; publishing refuses it
    assert kept.status_code == 200 and "The draft is saved." in kept.text
    publish = await editor.post("publish", named)
    assert publish.status_code == 400 and "The version is not published" in publish.text
    # the page comes back with the kept rows only, numbered anew
    assert [problems_of(publish.text, f"l-{i}") for i in range(5)] == [
        expected["l-0"],
        expected["l-1"],
        expected["l-3"],
        expected["l-4"],
        [],
    ]


async def test_a_limit_row_is_held_to_its_fields(editor: Editor) -> None:
    """Fields past their length, a unit that is no one short line, a field the kind does not take
    (sent without the page's script), and more rows than an action may have limits."""
    rows = [
        {"name": "u" * 101, "max": "5"},
        {"name": "counted", "max": "4", "param": "amount", "unit": "EUR"},
        {"name": "life", "max": "4", "period": "P1M"},
    ]
    answer = await editor.check(rows)
    assert answer["problems"] == {
        "l-0": ["name is longer than 100 characters"],
        "l-1": ["unit is only for a sum limit (a count has no unit)", "param is only for a sum limit"],
        "l-2": ["period: an executions limit counts over the mandate's life (use rate)"],
    }
    reordered = {"name": "spend", "kind": "sum", "max": "10", "param": "amount", "unit": "E\u202eUR"}
    answer = await editor.check([{"name": "uses", "max": "5"}, reordered])
    assert list(answer["problems"]) == ["l-1"], answer
    assert answer["problems"]["l-1"] == ["unit " + str(text_problem(reordered["unit"], multiline=False))]

    many = [{"name": f"l{i}", "max": "1"} for i in range(21)]
    answer = await editor.check(many)
    assert answer["general"] == ["limits has more than 20 rows."] and answer["publishable"] is False
    page = (await editor.post("check", many[:20])).text
    assert 'id="l-19-name"' in page and 'id="l-20-name"' not in page  # no blank row past 20
