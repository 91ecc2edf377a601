"""Actions in the dashboard: owners and developers create an action, rename it, write a draft's
params and rules, see each problem beside its rule (by the "Check" button and by the JSON check the
page's script calls), try the rules, publish (the digest shown, the version immutable from then on,
recorded as theirs), add a version, and delete an action only while no credential names it.
Support members are refused every page and form; another organization's actions are not found;
every form needs the session's CSRF token."""

from __future__ import annotations

import html
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine

from cli.devstack import EXAMPLE_ACTION_ID
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services.context import Context
from store import actions as store
from tests.conftest import new_org
from tests.support.action_editor import create, followed, problems_of, results_of
from tests.support.api_client import Credentials
from tests.support.audit import changes, issued_mandate, new_request
from tests.support.dashboard import log_in_as, page_client

pytestmark = pytest.mark.usefixtures("no_server_errors")
STALE = "This form has expired or did not come from the dashboard: reload the page."
UNDECLARED = "refers to undeclared field userParams.max"
UNDER_MAX = "executionParams.amount <= userParams.maxAmount"
KNOWN_PAYEE = "size(userParams.payees) == 0 || executionParams.payee in userParams.payees"


def editor(
    csrf: str,
    do: str,
    rules: list[tuple[str, str]],
    tries: dict[str, str] | None = None,
    **extra: str,
) -> dict[str, str]:
    """The version editor's form: the rent params (amount and payee; maxAmount and payees with a
    default), ``rules`` as (name, expression), a blank row of each as the page has, the try values."""
    form = {
        "csrf": csrf,
        "do": do,
        "e-0-name": "amount",
        "e-0-type": "number",
        "e-0-description": "Amount to pay",
        "e-1-name": "payee",
        "e-1-type": "string",
        "e-2-name": "",
        "e-2-type": "string",
        "u-0-name": "maxAmount",
        "u-0-type": "number",
        "u-1-name": "payees",
        "u-1-type": "array<string>",
        "u-1-default": "[]",
        "u-2-name": "",
        "u-2-type": "string",
    }
    for i, (name, expression) in enumerate([*rules, ("", "")]):
        form |= {f"r-{i}-name": name, f"r-{i}-expression": expression, f"r-{i}-description": ""}
    return form | {f"try-{k}": v for k, v in (tries or {}).items()} | extra


async def check(browser: httpx.AsyncClient, path: str, csrf: str, form: dict[str, str]) -> httpx.Response:
    return await browser.post(f"{path}/check", data=form, headers={"X-CSRF-Token": csrf})


@pytest.mark.parametrize("role", [MemberRole.OWNER, MemberRole.DEVELOPER])
async def test_a_member_writes_checks_tries_and_publishes_a_version(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, role: MemberRole
) -> None:
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, role, "builder")
        refused = await browser.post(
            "/dashboard/actions", data={"csrf": csrf, "name": " ", "description": ""}
        )
        assert refused.status_code == 400 and "The name is 1 to 200 characters." in refused.text
        key = await create(browser, csrf)
        path = f"/dashboard/actions/{key}/versions/1"
        listed = (await browser.get("/dashboard/actions")).text
        assert "Pay rent" in listed and f'href="{path}"' in listed and "Rent payments" in listed

        fresh = (await browser.get(path + "?notice=created")).text
        assert "The action is created with an empty draft" in fresh and 'id="editor"' in fresh
        assert "connect-src 'self'" in (await browser.get(path)).headers["content-security-policy"]

        # "Check" shows each problem beside its rule, with the texts publishing gives
        bad = [
            ("underMax", "executionParams.amount <= userParams.max"),
            ("broken", "executionParams.amount <="),
        ]
        bad += [("notBoolean", "executionParams.amount + 1.0")]
        posted = await browser.post(path, data=editor(csrf, "check", bad))
        # "Check" keeps a draft that reads (post, redirect, get): the stored draft's problems
        assert (posted.status_code, posted.headers["location"]) == (303, f"{path}?notice=checked")
        checked = await browser.get(posted.headers["location"])
        assert checked.status_code == 200 and "The draft is checked and saved." in checked.text
        assert problems_of(checked.text, "r-0") == [UNDECLARED]
        assert problems_of(checked.text, "r-1") == ["does not compile: syntax error at line 1, column 24"]
        assert problems_of(checked.text, "r-2") == ["yields double, not a boolean"]
        assert problems_of(checked.text, "e-0") == [] and problems_of(checked.text, "r-3") == []
        assert 'aria-describedby="r-0-problems" aria-invalid="true"' in checked.text
        assert "Fix the problems shown before publishing." in checked.text
        # the script's check: the same problems as JSON, by the page's row ids
        answer = await check(browser, path, csrf, editor(csrf, "check", bad))
        assert answer.status_code == 200
        assert answer.json() == {
            "problems": {
                "r-0": [UNDECLARED],
                "r-1": ["does not compile: syntax error at line 1, column 24"],
                "r-2": ["yields double, not a boolean"],
            },
            "general": [],
            "publishable": False,
            "allowsAny": False,
        }
        # a param with a bad name is shown beside it; the rule typed before its name is still checked
        typing = editor(csrf, "check", [("", "userParams.maxAmount")]) | {"e-1-name": "pay ee"}
        assert (await check(browser, path, csrf, typing)).json()["problems"] == {
            "e-1": ["name must match ^[a-zA-Z_][a-zA-Z0-9_]*$"],
            "r-0": ["name must be a non-empty string of at most 100", "yields double, not a boolean"],
        }
        assert "pay ee" not in (await browser.get(path)).text  # the script's check saves nothing

        good = [("underMax", UNDER_MAX), ("knownPayee", KNOWN_PAYEE)]
        saved = await followed(browser, await browser.post(path, data=editor(csrf, "save", good)))
        assert saved.status_code == 200 and "The draft is saved." in saved.text
        assert "No problems: ready to publish." in saved.text
        assert (await check(browser, path, csrf, editor(csrf, "check", good))).json()["publishable"] is True
        assert store.spec_of(_version(engine, org, key, 1)).rules[1].expression == KNOWN_PAYEE

        # "Try it": the rules run as a verification runs them
        tries = {"e-amount": "1200", "e-payee": "Bob", "u-maxAmount": "1000", "u-payees": '["Ann"]'}
        tried = await browser.post(path, data=editor(csrf, "try", good, tries))
        assert results_of(tried.text) == {"underMax": ("false", ""), "knownPayee": ("false", "")}
        tries |= {"e-amount": "900", "u-payees": ""}  # empty: the default [] applies
        assert results_of((await browser.post(path, data=editor(csrf, "try", good, tries))).text) == {
            "underMax": ("true", ""),
            "knownPayee": ("true", ""),
        }
        dividing = [("divides", "1 / (size(userParams.payees) - size(userParams.payees)) == 1")]
        erring = await browser.post(path, data=editor(csrf, "try", dividing, tries))
        assert results_of(erring.text) == {"divides": ("error", "modulus or divide by zero")}
        wrong = await browser.post(
            path, data=editor(csrf, "try", good, {"e-amount": "lots", "u-maxAmount": "1"})
        )
        assert results_of(wrong.text) == {}
        assert "<li>executionParams.amount must be a number</li>" in wrong.text
        assert "<li>executionParams.payee is missing</li>" in wrong.text
        late = await browser.post(path, data=editor(csrf, "try", good, tries | {"now": "yesterday"}))
        assert results_of(late.text) == {} and "now must be an RFC 3339 timestamp" in late.text
        at = tries | {"now": "2025-06-01T00:00:00+02:00"}
        dated = [("june", "now == timestamp('2025-05-31T22:00:00Z')")]
        assert results_of((await browser.post(path, data=editor(csrf, "try", dated, at))).text) == {
            "june": ("true", "")
        }

        published = await browser.post(path, data=editor(csrf, "publish", good))
        assert (published.status_code, published.headers["location"]) == (303, path + "?notice=published")
        page = (await browser.get(path + "?notice=published")).text
        digest = _version(engine, org, key, 1).digest_sri
        assert digest and digest.startswith("sha256-") and f'id="digest">{digest}</code>' in page
        assert 'id="editor"' not in page and 'name="do"' not in page and "<script" not in page
        assert "The version is published" in page and '<td data-label="Name">knownPayee</td>' in page
        assert f'<code class="expr">{html.escape(KNOWN_PAYEE)}</code>' in page

        # immutable: every edit is refused and changes nothing
        again = await browser.post(path, data=editor(csrf, "save", [("other", "true")]))
        assert again.status_code == 409 and "published and can no longer change" in again.text
        assert (await check(browser, path, csrf, editor(csrf, "check", good))).status_code == 409
        assert _version(engine, org, key, 1).digest_sri == digest
        assert store.spec_of(_version(engine, org, key, 1)).rules[0].name == "underMax"

        action_page = (await browser.get(f"/dashboard/actions/{key}")).text
        assert f"<code>{digest}</code>" in action_page and ">published</span>" in action_page

    records = [(r.type, r.actor, r.data) for r in changes(engine, org.organization_id)]
    assert records == [
        (
            "ACTION_PUBLISHED",
            f"member:{member_id}",
            {"actionId": f"urn:via:action:{key}", "version": 1, "digestSRI": digest},
        )
    ]


def _version(engine: Engine, org: Credentials, key: str, number: int) -> Any:
    found = store.version_by_number(engine, org.organization_id, f"urn:via:action:{key}", number)
    assert found is not None
    return found


async def test_a_refused_publish_lists_the_problems_and_keeps_the_draft(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        key = await create(browser, csrf)
        path = f"/dashboard/actions/{key}/versions/1"
        bad = [("underMax", "executionParams.amount <= userParams.max")]
        refused = await browser.post(path, data=editor(csrf, "publish", bad))
        assert refused.status_code == 400 and "The version is not published" in refused.text
        assert problems_of(refused.text, "r-0") == [UNDECLARED]
        version = _version(engine, org, key, 1)
        assert (version.status, version.digest_sri) == ("draft", None)
        assert store.spec_of(version).rules[0].expression == "executionParams.amount <= userParams.max"
        # the page as stored shows the problem too, and a draft that cannot be read is not saved
        assert problems_of((await browser.get(path)).text, "r-0") == [UNDECLARED]
        unreadable = editor(csrf, "save", bad) | {"u-0-default": "a lot"}
        not_saved = await browser.post(path, data=unreadable)
        assert not_saved.status_code == 400 and "The draft is not saved" in not_saved.text
        assert problems_of(not_saved.text, "u-0") == ["default must be a number"]
        untried = await browser.post(path, data=unreadable | {"do": "try", "try-e-amount": "1"})
        assert untried.status_code == 400 and "The rules did not run: fix the problems" in untried.text
        too_big = editor(csrf, "save", bad) | {"u-0-type": "integer", "u-0-default": str(2**60)}
        unsignable = await browser.post(path, data=too_big)
        assert unsignable.status_code == 400 and "within ±(2^53-1)" in html.unescape(unsignable.text)
        long_rule = editor(csrf, "save", [("r", "true || " * 600 + "true")])
        assert problems_of((await browser.post(path, data=long_rule)).text, "r-0") == [
            "expression is longer than 4096 characters"
        ]
        assert store.spec_of(_version(engine, org, key, 1)).user_params[0].has_default is False
    assert changes(engine, org.organization_id) == []


async def test_publishing_without_rules_or_limits_asks_for_a_confirmation(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """Issue 34: a version with no rules and no limits was "ready to publish" in one click, and
    its mandates allow any execution. The page says so, and publishing needs the box ticked."""
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        key = await create(browser, csrf)
        path = f"/dashboard/actions/{key}/versions/1"
        answer = (await check(browser, path, csrf, editor(csrf, "check", []))).json()
        assert (answer["publishable"], answer["allowsAny"]) == (True, True)
        saved = await browser.post(path, data=editor(csrf, "save", []))
        saved = await browser.get(saved.headers["location"])
        assert "no rules and no limits: its mandates will allow any execution" in saved.text
        assert 'id="allow-any-box" class="inline" hidden' not in saved.text  # the box is offered
        refused = await browser.post(path, data=editor(csrf, "publish", []))
        assert refused.status_code == 400 and "Confirm to publish it anyway" in refused.text
        assert _version(engine, org, key, 1).status == "draft"
        assert changes(engine, org.organization_id) == []
        done = await browser.post(path, data=editor(csrf, "publish", []) | {"allow-any": "yes"})
        assert done.status_code == 303 and _version(engine, org, key, 1).status == "published"
        # the action's page: how to use it in a request (run in tests/sdk/test_sdk_action_snippet.py)
        shown = html.unescape((await browser.get(f"/dashboard/actions/{key}")).text)
        action_id = _version(engine, org, key, 1).action_id
        assert 'id="example-curl"' in shown and 'id="example-python"' in shown
        assert f'"action":{{"id":"{action_id}"' in shown and f'ActionDto(id="{action_id}"' in shown
        assert org.secret not in shown and "Copy the curl example" in shown


async def test_an_action_is_renamed_versioned_and_deleted(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        member_id, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        key = await create(browser, csrf)
        path = f"/dashboard/actions/{key}"
        good = [("underMax", UNDER_MAX)]
        assert (
            await browser.post(f"{path}/versions/1", data=editor(csrf, "publish", good))
        ).status_code == 303

        bad_name = await browser.post(path, data={"csrf": csrf, "name": "Pay\u202erent", "description": ""})
        assert (
            bad_name.status_code == 400 and "The name holds characters it may not: U+202E." in bad_name.text
        )
        renamed = await browser.post(
            path, data={"csrf": csrf, "name": "Pay the rent", "description": "Monthly"}
        )
        assert (renamed.status_code, renamed.headers["location"]) == (303, f"{path}?notice=saved")
        added = await browser.post(f"{path}/versions", data={"csrf": csrf})
        assert (added.status_code, added.headers["location"]) == (303, f"{path}/versions/2")
        second = _version(engine, org, key, 2)
        assert (second.status, store.spec_of(second).name, store.spec_of(second).rules[0].expression) == (
            "draft",
            "Pay the rent",
            UNDER_MAX,
        )  # a copy of version 1 under the new name
        assert store.spec_of(_version(engine, org, key, 1)).name == "Pay rent"  # published: as it was
        page = (await browser.get(path)).text
        assert "<h1>Pay the rent</h1>" in page and "Version 2" in page and ">draft</span>" in page
        assert 'data-label="Mandates issued">0</td>' in page and "Delete the action" in page

        unconfirmed = await browser.post(f"{path}/delete", data={"csrf": csrf})
        assert unconfirmed.status_code == 400 and "Tick the box to confirm" in unconfirmed.text
        deleted = await browser.post(f"{path}/delete", data={"csrf": csrf, "confirm": "yes"})
        assert (deleted.status_code, deleted.headers["location"]) == (
            303,
            "/dashboard/actions?notice=deleted",
        )
        assert (await browser.get(path)).status_code == 404
        assert (
            store.get_action(engine, org.organization_id, f"urn:via:action:{key}", published_only=False)
            is None
        )
    (record,) = [r for r in changes(engine, org.organization_id) if r.type == "ACTION_DELETED"]
    assert record.actor == f"member:{member_id}"
    assert (record.data["actionId"], record.data["name"], record.data["versions"]) == (
        f"urn:via:action:{key}",
        "Pay the rent",
        2,
    )
    assert len(record.data["published"]) == 1 and record.data["published"][0].startswith("sha256-")


async def test_an_action_a_mandate_pins_cannot_be_deleted(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    issued_mandate(engine, cipher, settings, org.organization_id)  # against the example action
    new_request(engine, org.organization_id)  # and a request still waiting for its decision
    key = EXAMPLE_ACTION_ID.removeprefix("urn:via:action:")
    reason = (
        "This action cannot be deleted: 2 request credentials name it (1 issued mandate). A mandate pins"
        " the version it was issued against for good: publish a new version instead."
    )
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "developer")
        page = (await browser.get(f"/dashboard/actions/{key}")).text
        assert 'data-label="Mandates issued">1</td>' in page
        assert reason in page and f'action="/dashboard/actions/{key}/delete"' not in page
        refused = await browser.post(
            f"/dashboard/actions/{key}/delete", data={"csrf": csrf, "confirm": "yes"}
        )
        assert refused.status_code == 409 and html.unescape(refused.text).count(reason) == 2
    assert store.get_action(engine, org.organization_id, EXAMPLE_ACTION_ID) is not None


async def test_a_support_member_is_refused_every_actions_page_and_form(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    key = EXAMPLE_ACTION_ID.removeprefix("urn:via:action:")
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        assert 'href="/dashboard/actions"' not in (await browser.get("/dashboard")).text  # not offered
        for path in (
            "/dashboard/actions",
            f"/dashboard/actions/{key}",
            f"/dashboard/actions/{key}/versions/1",
        ):
            refused = await browser.get(path)
            assert refused.status_code == 403 and "Your role cannot use this page" in refused.text, path
        forms = {
            "/dashboard/actions": {"name": "Mine"},
            f"/dashboard/actions/{key}": {"name": "Renamed"},
            f"/dashboard/actions/{key}/versions": {},
            f"/dashboard/actions/{key}/delete": {"confirm": "yes"},
            f"/dashboard/actions/{key}/versions/1": editor(csrf, "save", [("t", "true")]),
        }
        for path, form in forms.items():
            assert (await browser.post(path, data={"csrf": csrf, **form})).status_code == 403, path
        checked = await check(
            browser, f"/dashboard/actions/{key}/versions/1", csrf, editor(csrf, "check", [])
        )
        assert checked.status_code == 403
    assert [view.action.name for view in store.list_actions(engine, org.organization_id)] == ["Rent payments"]
    assert len(store.list_actions(engine, org.organization_id)[0].versions) == 1
    assert changes(engine, org.organization_id) == []


async def test_another_organizations_action_is_not_found(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, cipher: SecretCipher, settings: Settings
) -> None:
    other = new_org(engine, cipher, settings)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, other, MemberRole.OWNER, "other")
        theirs = await create(browser, csrf, "Their secret action")
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        assert "Their secret action" not in (await browser.get("/dashboard/actions")).text
        base = f"/dashboard/actions/{theirs}"
        for path in (base, f"{base}/versions/1"):
            missing = await browser.get(path)
            assert missing.status_code == 404 and "Their secret action" not in missing.text, path
        posts = {
            base: {"name": "Taken over"},
            f"{base}/versions": {},
            f"{base}/delete": {"confirm": "yes"},
            f"{base}/versions/1": editor(csrf, "publish", [("t", "true")]),
        }
        for path, form in posts.items():
            assert (await browser.post(path, data={"csrf": csrf, **form})).status_code == 404, path
        checked = await check(browser, f"{base}/versions/1", csrf, editor(csrf, "check", []))
        assert checked.status_code == 404 and checked.json()["general"] == ["No such action version."]
        mine = EXAMPLE_ACTION_ID.removeprefix("urn:via:action:")
        for bad in (mine.upper(), mine + "0", "%2e%2e", "x" * 36, f"urn:via:action:{mine}"):
            assert (await browser.get(f"/dashboard/actions/{bad}")).status_code == 404, bad
            assert (await browser.post(f"/dashboard/actions/{bad}", data={"csrf": csrf})).status_code == 404
        for number in ("0", "01", "2", "1e0", "-1", "9999999"):
            assert (await browser.get(f"/dashboard/actions/{mine}/versions/{number}")).status_code == 404
    view = store.get_action(engine, other.organization_id, f"urn:via:action:{theirs}", published_only=False)
    assert view is not None and view.action.name == "Their secret action"
    assert [(v.number, v.status) for v in view.versions] == [(1, "draft")]
    assert changes(engine, other.organization_id) == []


async def test_every_form_needs_the_sessions_csrf_token(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    key = EXAMPLE_ACTION_ID.removeprefix("urn:via:action:")
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        posts = {
            "/dashboard/actions": {"name": "Sneaky"},
            f"/dashboard/actions/{key}": {"name": "Sneaky"},
            f"/dashboard/actions/{key}/versions": {},
            f"/dashboard/actions/{key}/delete": {"confirm": "yes"},
        }
        for path, form in posts.items():
            for token in ("", "f" * 64):
                refused = await browser.post(path, data={"csrf": token, **form})
                assert refused.status_code == 403 and STALE in html.unescape(refused.text), path
        path = f"/dashboard/actions/{key}/versions/1"
        assert (await check(browser, path, "", editor(csrf, "check", []))).status_code == 403
        no_header = await browser.post(f"{path}/check", data=editor(csrf, "check", []))  # in the body only
        assert no_header.status_code == 403
        cross_site = await browser.post(
            f"{path}/check",
            data=editor(csrf, "check", []),
            headers={"X-CSRF-Token": csrf, "Sec-Fetch-Site": "cross-site"},
        )
        assert cross_site.status_code == 403
    assert len(store.list_actions(engine, org.organization_id, published_only=False)) == 1
    assert len(store.list_actions(engine, org.organization_id)[0].versions) == 1
