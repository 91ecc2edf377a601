"""The action editor under the bounds and the step budget of issue 30 (item 1: "the editor's check
and try-it under the same limit"): a param's maxLength and maxItems typed, stored, shown back and
shown on the published version; a rule that may take more than the budget refused beside its row
by "Check" and "Publish"; "Try it" refuses values over a bound, runs costly rules in an evaluation
process in the organization's turn and shows a run stopped at the budget as a verification would
deny it; and the checks, which estimate and sample rules, never run on the event loop."""

from __future__ import annotations

import html
import json
import os
import re
import threading
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import httpx
import pytest
import pytest_asyncio
from fastapi import FastAPI
from sqlalchemy import Engine

from core.kinds import MemberRole
from policy.cel import parse
from policy.cost import declared_roots, estimate
from policy.jobs import RulesJob
from policy.params import Param
from policy.rules import LIMIT_REASON, NOT_RUN_REASON
from services import action_drafts
from services.context import Context
from services.errors import Unavailable
from store import actions as store
from tests.support.action_editor import create, followed, problems_of, results_of
from tests.support.api_client import Credentials
from tests.support.dashboard import log_in_as, page_client

pytestmark = pytest.mark.usefixtures("no_server_errors")
QUADRATIC = "executionParams.items.all(x, executionParams.items.exists_one(y, y == x))"
LINEAR = "executionParams.items.all(x, x != '')"
WHOLE = "must be a whole number from 1 to 10,000"


def batch(csrf: str, do: str, rules: list[tuple[str, str]], **fields: str) -> dict[str, str]:
    """The editor's form of a batch action: executionParams ``items`` (array<string>) and ``note``
    (string), userParams ``cap`` (integer) and ``tags`` (array<string>, default []), ``rules`` as
    (name, expression), a blank row of each list; ``fields`` override or add form fields."""
    form = {
        "csrf": csrf,
        "do": do,
        "e-0-name": "items",
        "e-0-type": "array<string>",
        "e-1-name": "note",
        "e-1-type": "string",
        "e-2-name": "",
        "e-2-type": "string",
        "u-0-name": "cap",
        "u-0-type": "integer",
        "u-1-name": "tags",
        "u-1-type": "array<string>",
        "u-1-default": "[]",
        "u-2-name": "",
        "u-2-type": "string",
    }
    for i, (name, expression) in enumerate([*rules, ("", "")]):
        form |= {f"r-{i}-name": name, f"r-{i}-expression": expression}
    return form | fields


def items(count: int) -> str:
    """A "Try it" value: an array of ``count`` distinct strings, as JSON."""
    return json.dumps([f"i{n}" for n in range(count)])


def value_of(page: str, field: str) -> str:
    found = re.search(rf'id="{field}" name="{field}" value="([^"]*)"', page)
    assert found, f"no field {field}"
    return html.unescape(found.group(1))


def bounds_shown(page: str) -> list[tuple[str, str, str]]:
    """A published version's params as its page lists them: (name, max length, max items)."""
    rows = re.findall(
        r'<td data-label="Name"><code>(\w+)</code></td>.*?<td data-label="Max length">(.*?)</td>\s*'
        r'<td data-label="Max items">(.*?)</td>',
        page,
        re.DOTALL,
    )
    return [(name, re.sub(r"<[^>]+>", "", a), re.sub(r"<[^>]+>", "", b)) for name, a, b in rows]


def _spec(engine: Engine, org: Credentials, key: str) -> Any:
    found = store.version_by_number(engine, org.organization_id, f"urn:via:action:{key}", 1)
    assert found is not None
    return store.spec_of(found)


@dataclass
class Editor:
    """A developer's browser on the editor of a new action's draft version 1."""

    browser: httpx.AsyncClient
    csrf: str
    key: str

    @property
    def path(self) -> str:
        return f"/dashboard/actions/{self.key}/versions/1"

    async def post(self, do: str, rules: list[tuple[str, str]], **fields: str) -> httpx.Response:
        return await followed(
            self.browser, await self.browser.post(self.path, data=batch(self.csrf, do, rules, **fields))
        )

    async def check(self, rules: list[tuple[str, str]], **fields: str) -> dict[str, Any]:
        """The script's check: the problems as JSON."""
        answer = await self.browser.post(
            f"{self.path}/check",
            data=batch(self.csrf, "check", rules, **fields),
            headers={"X-CSRF-Token": self.csrf},
        )
        assert answer.status_code == 200
        found: dict[str, Any] = answer.json()
        return found


@pytest_asyncio.fixture
async def editor(app: FastAPI, ctx: Context, org: Credentials) -> AsyncIterator[Editor]:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "bounds")
        yield Editor(browser, csrf, await create(browser, csrf, "Batch"))


async def test_the_editor_reads_stores_and_shows_bounds(
    editor: Editor, org: Credentials, engine: Engine
) -> None:
    blank = (await editor.browser.get(editor.path)).text
    for field in ("e-0-maxlength", "e-0-maxitems", "u-0-maxlength", "u-0-maxitems"):
        assert value_of(blank, field) == ""
    assert 'aria-describedby="e-bounds-hint e-0-problems"' in blank
    assert "empty, 1,000 characters and 100 items" in re.sub(r"\s+", " ", blank)

    bounded = {
        "e-0-maxitems": "20",
        "e-0-maxlength": " 0064 ",  # digits, spaces around: 64
        "e-1-maxlength": "500",
        "e-1-maxitems": "7",  # a string has no items: ignored
        "u-0-maxlength": "9",  # nor has an integer characters
        "u-1-maxitems": "3",
    }
    saved = await editor.post("save", [("some", LINEAR)], **bounded)
    assert saved.status_code == 200 and "The draft is saved." in saved.text
    spec = _spec(engine, org, editor.key)
    assert [(p.name, p.max_length, p.max_items) for p in spec.execution_params + spec.user_params] == [
        ("items", 64, 20),
        ("note", 500, None),
        ("cap", None, None),
        ("tags", None, 3),
    ]
    stored = (await editor.browser.get(editor.path)).text  # shown back from the stored draft
    assert {field: value_of(stored, field) for field in [*bounded, "u-1-maxlength"]} == {
        "e-0-maxitems": "20",
        "e-0-maxlength": "64",
        "e-1-maxlength": "500",
        "e-1-maxitems": "",
        "u-0-maxlength": "",
        "u-1-maxitems": "3",
        "u-1-maxlength": "",
    }

    # anything but digits is passed on as typed, and the params' check names it beside the row
    wrong = {"e-0-maxitems": "lots", "e-1-maxlength": "10001", "u-1-maxlength": "0", "u-1-maxitems": "1" * 13}
    checked = await editor.post("check", [("some", LINEAR)], **wrong)
    assert problems_of(checked.text, "e-0") == [f"maxItems {WHOLE}"]
    assert problems_of(checked.text, "e-1") == [f"maxLength {WHOLE}"]
    assert problems_of(checked.text, "u-1") == ["maxItems is longer than 12 characters", f"maxLength {WHOLE}"]
    assert value_of(checked.text, "e-0-maxitems") == "lots"
    assert (await editor.check([], **wrong))["problems"] == {
        "e-0": [f"maxItems {WHOLE}"],
        "e-1": [f"maxLength {WHOLE}"],
        "u-1": ["maxItems is longer than 12 characters", f"maxLength {WHOLE}"],
    }

    assert (await editor.post("publish", [("some", LINEAR)], **bounded)).status_code == 303
    assert bounds_shown((await editor.browser.get(editor.path)).text) == [
        ("items", "64", "20"),
        ("note", "500", "does not apply"),
        ("cap", "does not apply", "does not apply"),
        ("tags", "1,000 (default)", "3"),
    ]


async def test_a_rule_over_the_budget_is_refused_beside_its_row(
    editor: Editor, org: Credentials, engine: Engine
) -> None:
    """At 10,000 items one pass over them may take more than a verification's 10,000 steps; at
    1,000 it fits, but two such rules together do not; the quadratic rule fits at 10 items."""
    steps = estimate(parse(LINEAR), declared_roots([Param("items", "array<string>", max_items=10_000)], []))
    over = (
        f"may take up to {steps:,} steps at its params' maximum sizes, more than the 10,000 one verification"
    )
    advice = "lower the maxItems or maxLength of the params it reads, or simplify it"
    rules = [("fine", "size(executionParams.items) > 0"), ("each", LINEAR)]
    many = {"e-0-maxitems": "10000"}
    checked = await editor.post("check", rules, **many)
    (problem,) = problems_of(checked.text, "r-1")
    assert problem.startswith(over) and problem.endswith(advice)
    assert problems_of(checked.text, "r-0") == [] and problems_of(checked.text, "general") == []
    assert "Fix the problems shown before publishing." in checked.text
    assert await editor.check(rules, **many) == {
        "problems": {"r-1": [problem]},
        "general": [],
        "publishable": False,
        "allowsAny": False,
    }

    refused = await editor.post("publish", rules, **many)
    assert refused.status_code == 400 and "The version is not published" in refused.text
    assert problems_of(refused.text, "r-1") == [problem] and problems_of(refused.text, "r-0") == []
    stored = store.version_by_number(engine, org.organization_id, f"urn:via:action:{editor.key}", 1)
    assert stored is not None and (stored.status, stored.digest_sri) == ("draft", None)

    # each fits at 1,000 items; together they do not: a problem of the draft as a whole
    both = [("each", LINEAR), ("again", "executionParams.items.exists(x, x == 'a')")]
    together = await editor.post("publish", both, **{"e-0-maxitems": "1000"})
    assert together.status_code == 400
    assert problems_of(together.text, "r-0") == [] and problems_of(together.text, "r-1") == []
    (general,) = problems_of(together.text, "general")
    thousand = declared_roots([Param("items", "array<string>", max_items=1000)], [])
    total = sum(estimate(parse(rule), thousand) for _, rule in both)
    assert general.startswith(f"rules together may take up to {total:,} steps at their params' maximum sizes")

    quadratic = [("distinct", QUADRATIC)]
    at_default = estimate(parse(QUADRATIC), declared_roots([Param("items", "array<string>")], []))
    assert problems_of((await editor.post("check", quadratic)).text, "r-0")[0].startswith(
        f"may take up to {at_default:,} steps"
    )  # at the default maxItems, 100
    small = await editor.post("publish", quadratic, **{"e-0-maxitems": "10"})
    assert small.status_code == 303, problems_of(small.text, "r-0")


def listed(page: str) -> list[str]:
    """The problems "Try it" lists for the values."""
    return [html.unescape(p) for p in re.findall(r"<li>(.*?)</li>", page)]


async def test_try_it_refuses_values_over_a_bound(editor: Editor) -> None:
    rules = [("some", "size(executionParams.items) > 0")]
    bounded = {"e-0-maxitems": "2", "e-0-maxlength": "3"}
    values = {"try-e-items": '["a", "b"]', "try-e-note": "n" * 1_000, "try-u-cap": "1"}
    assert results_of((await editor.post("try", rules, **bounded, **values)).text) == {"some": ("true", "")}
    over = values | {"try-e-items": '["a", "b", "c"]', "try-e-note": "n" * 1_001}
    refused = await editor.post("try", rules, **bounded, **over)
    assert results_of(refused.text) == {}
    assert "The rules did not run: a verification refuses such values before any rule." in refused.text
    assert listed(refused.text) == [
        "executionParams.items has 3 items, more than its maxItems of 2",
        "executionParams.note is 1,001 characters long, more than its maxLength of 1,000",
    ]
    long_item = values | {"try-e-items": '["abcd"]', "try-u-tags": json.dumps(["t"] * 101)}
    assert listed((await editor.post("try", rules, **bounded, **long_item)).text) == [
        "executionParams.items item 0 is 4 characters long, more than its maxLength of 3",
        "userParams.tags has 101 items, more than its maxItems of 100",
    ]
    huge = values | {"try-e-note": "n" * 200_001}  # named, not cut to a length that fits
    assert listed((await editor.post("try", rules, **bounded, **huge)).text) == [
        "executionParams.note is longer than the 200,000 characters a value tried here may have"
    ]


async def test_try_it_runs_costly_rules_in_an_evaluation_process(editor: Editor, app: FastAPI) -> None:
    """The quadratic rule (too costly to publish at 100 items, but a draft may be tried) on 20
    items runs in an evaluation process, not the API's; on 100 distinct items it is stopped at the
    budget, shown as a verification would deny it."""
    pool = app.state.ctx.rules
    rules = [("distinct", QUADRATIC), ("some", "size(executionParams.items) > 0")]
    twenty = {"try-e-items": items(20), "try-e-note": "n", "try-u-cap": "1"}
    ran = sum(pool.ran_in.values())
    tried = await editor.post("try", rules, **twenty)
    assert results_of(tried.text) == {"distinct": ("true", ""), "some": ("true", "")}
    assert sum(pool.ran_in.values()) == ran + 1 and os.getpid() not in pool.ran_in
    assert 'id="try-limit"' not in tried.text

    stopped = await editor.post("try", rules, **twenty | {"try-e-items": items(100)})
    assert stopped.status_code == 200
    assert results_of(stopped.text) == {
        "distinct": ("error", LIMIT_REASON.format(budget=10_000)),
        "some": ("error", NOT_RUN_REASON),
    }
    assert sum(pool.ran_in.values()) == ran + 2 and os.getpid() not in pool.ran_in
    limit = re.search(r'id="try-limit">(.*?)</p>', stopped.text, re.DOTALL)
    assert limit and re.sub(r"\s+", " ", limit.group(1)) == (
        "The rules were stopped: they took more than the 10,000 steps one verification may take. "
        "A verification with these values would be denied with <code>rule_limit_exceeded</code>."
    )


async def test_try_it_asks_to_try_again_when_the_rules_cannot_run_now(
    editor: Editor, app: FastAPI, monkeypatch: pytest.MonkeyPatch
) -> None:
    pool = app.state.ctx.rules
    rules = [("distinct", QUADRATIC)]
    values = {"try-e-items": items(20), "try-e-note": "n", "try-u-cap": "1"}
    monkeypatch.setattr(pool, "waiting_per_org", 0)  # the organization's queue is full
    busy = await editor.post("try", rules, **values)
    assert (busy.status_code, busy.headers["retry-after"]) == (429, "1")
    assert "please try again in a second." in busy.text and results_of(busy.text) == {}
    assert value_of(busy.text, "try-e-items") == values["try-e-items"]  # the form as typed

    async def unavailable(org_id: str, job: RulesJob) -> Any:
        raise Unavailable("no process", retry_after=1)

    monkeypatch.setattr(pool, "run", unavailable)
    down = await editor.post("try", rules, **values)
    assert down.status_code == 503 and "please try again in a moment." in down.text
    # rules cheap enough to run inline wait for no process
    assert results_of((await editor.post("try", [("some", LINEAR)], **values)).text) == {"some": ("true", "")}


async def test_the_page_and_its_checks_never_run_on_the_event_loop(
    editor: Editor, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``services.action_drafts.check`` (rules estimated and sampled), an inline run of "Try it" and
    publishing's checks run on threads other than the event loop's: the page as stored, "Check",
    the script's check, "Try it" and "Publish" (each of which checks the draft too)."""
    loop_thread = threading.get_ident()
    seen: dict[str, list[int]] = {"check": [], "run": [], "publish": []}

    def recorded(name: str, work: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            seen[name].append(threading.get_ident())
            return work(*args, **kwargs)

        return wrapper

    monkeypatch.setattr(action_drafts, "check", recorded("check", action_drafts.check))
    monkeypatch.setattr(store, "check_spec", recorded("publish", store.check_spec))  # publishing's checks
    monkeypatch.setattr(RulesJob, "run", recorded("run", RulesJob.run))
    rules = [("some", LINEAR)]
    assert (await editor.browser.get(editor.path)).status_code == 200
    assert len(seen["check"]) == 1 and loop_thread not in seen["check"]
    assert (await editor.post("check", rules)).status_code == 200
    assert (await editor.check(rules))["publishable"] is True
    tried = await editor.post("try", rules, **{"try-e-items": '["a"]', "try-e-note": "n", "try-u-cap": "1"})
    assert results_of(tried.text) == {"some": ("true", "")}
    assert (await editor.post("publish", rules)).status_code == 303
    # the checks: the page, Check's post and the page it leads to, the script's, Try it, Publish
    assert [len(seen[name]) for name in ("check", "run", "publish")] == [6, 1, 1]
    assert loop_thread not in seen["check"] + seen["run"] + seen["publish"], seen
