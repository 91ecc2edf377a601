"""Text people read or that is signed, in the dashboard's forms (issue 30, item 5), through the real
app with a logged-in member: ``core.text``'s one rule refuses a control character, a line separator
or a bidi control (a line feed too where the field is one line) with the page and the field named
(400), and nothing is saved. The forms: revoking a mandate, a key's name and description, the
webhook's URL, the settings' frame origins, an action's name and description, and the actions
editor's param descriptions and rule names, descriptions and expressions."""

from __future__ import annotations

import html

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Engine, select
from sqlmodel import col

from core.actors import Actor
from core.kinds import ActionVersionStatus, MemberRole
from core.secretbox import SecretCipher
from core.settings import Settings
from services import actions
from services.actions import PublishRefused
from services.context import Context
from store import actions as action_store
from store import orgs
from store import webhooks as webhook_store
from store.tables import ActionVersion, Credential
from tests.support.actions import RENT, published
from tests.support.api_client import Credentials
from tests.support.audit import issued_mandate
from tests.support.dashboard import log_in_as, page_client

pytestmark = pytest.mark.usefixtures("no_server_errors")

FAKE_LINE = "\n2026-01-31 12:00:00 MANDATE_REVOKED by operator:root"
ONE_LINE = "must be one line without control, line separator or bidi override characters"
MULTILINE = (
    "must not hold control characters other than line breaks, nor line separator or bidi override characters"
)


def said(page: httpx.Response) -> str:
    return html.unescape(page.text)


@pytest.mark.parametrize(
    ("reason", "found"),
    [
        ("user_initiated" + FAKE_LINE, "U+000A"),
        ("user_initiated\u202e", "U+202E"),
        ("x\u2066y\u2069", "U+2066"),
    ],
)
async def test_a_revocation_reason_is_one_line(
    app: FastAPI,
    ctx: Context,
    org: Credentials,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    reason: str,
    found: str,
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "support")
        refused = await browser.post(
            f"/dashboard/mandates/{issued.credential_id}/revoke",
            data={"csrf": csrf, "confirm": "yes", "reason": reason},
        )
    assert refused.status_code == 400 and f"it holds {found}" in said(refused)
    with engine.connect() as conn:
        row = conn.execute(select(Credential).where(col(Credential.id) == issued.credential_id)).one()
    assert (row.status, row.revocation_reason, row.revocation_receipt) == ("ACTIVE", None, None)


@pytest.mark.parametrize(
    "url",
    [
        "https://93.184.216.34/hooks/\u202egnp.exe",  # a public address: nothing else refuses it
        "https://93.184.216.34/hooks\u2028x",
        "https://93.184.216.34/\u200fhooks",
        "https://93.184.216.34/ho\x85oks",
    ],
)
async def test_a_webhook_url_holds_no_control_or_bidi_character(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, url: str
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "hooks")
        refused = await browser.post("/dashboard/webhooks/add", data={"csrf": csrf, "url": url})
        fine = await browser.post(
            "/dashboard/webhooks/add", data={"csrf": csrf, "url": "https://93.184.216.34/hooks"}
        )
    assert refused.status_code == 400
    assert "the webhook URL must not contain spaces, control or bidi override characters" in said(refused)
    assert fine.status_code == 303, fine.text[-1500:]  # saved: post, redirect, get (issue 34)
    row = webhook_store.config_row(engine, org.organization_id)
    assert row is not None and row.url == "https://93.184.216.34/hooks"  # the refused one was never saved


async def test_a_frame_origin_holds_no_bidi_character(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        refused = await browser.post(
            "/dashboard/settings",
            data={"csrf": csrf, "origins": "https://app.example.com\u202e", "minutes": "5", "version": ""},
        )
    assert refused.status_code == 400 and "https://app.example.com" in said(refused)
    assert not orgs.get_organization(engine, org.organization_id).frame_origins


@pytest.mark.parametrize(
    ("form", "why"),
    [
        ({"name": "\u202eyek"}, "The key's name must be one line of printable characters: it holds U+202E."),
        (
            {"name": "ok", "description": "a\u2069b"},
            "The description must be one line of printable characters",
        ),
    ],
)
async def test_a_key_label_is_one_line(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, form: dict[str, str], why: str
) -> None:
    before = len(orgs.list_keys(engine, org.organization_id))
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        refused = await browser.post("/dashboard/keys", data={"csrf": csrf, **form})
    assert refused.status_code == 400 and why in said(refused)
    assert len(orgs.list_keys(engine, org.organization_id)) == before


# --- the actions editor: what the command line's spec file goes through too ---------------------


def _draft(csrf: str, do: str, **fields: str) -> dict[str, str]:
    """The editor's form: one execution param and one rule; ``fields`` replace its values."""
    form = {
        "csrf": csrf,
        "do": do,
        "e-0-name": "amount",
        "e-0-type": "number",
        "e-0-description": "Amount to pay",
        "r-0-name": "small",
        "r-0-expression": "executionParams.amount < 100",
        "r-0-description": "At most 100",
    }
    return form | fields


BAD_DRAFTS = [
    ({"e-0-description": "Amount \u202eEUR"}, "e-0", f"description {MULTILINE}", "U+202E"),
    ({"e-0-description": "Amount\tto pay"}, "e-0", f"description {MULTILINE}", "U+0009"),
    ({"r-0-name": "small" + FAKE_LINE}, "r-0", f"name {ONE_LINE}", "U+000A"),
    ({"r-0-description": "At most \u2066100\u2069"}, "r-0", f"description {MULTILINE}", "U+2066, U+2069"),
    (
        {"r-0-expression": "executionParams.amount < 100 || 'x\u202e' == 'y'"},
        "r-0",
        f"expression {MULTILINE}",
        "U+202E",
    ),
]


def _pay_draft(engine: Engine, org_id: str) -> ActionVersion:
    [version] = [
        v
        for a in action_store.list_actions(engine, org_id, published_only=False)
        if a.action.name == "Pay"
        for v in a.versions
    ]
    return version


@pytest.mark.parametrize(("fields", "row", "problem", "found"), BAD_DRAFTS)
async def test_the_editor_shows_the_problem_beside_its_row_and_saves_nothing(
    app: FastAPI,
    ctx: Context,
    org: Credentials,
    engine: Engine,
    fields: dict[str, str],
    row: str,
    problem: str,
    found: str,
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "editor")
        created = await browser.post(
            "/dashboard/actions", data={"csrf": csrf, "name": "Pay", "description": ""}
        )
        path = created.headers["location"].split("?", 1)[0]
        check = await browser.post(
            f"{path}/check", data=_draft(csrf, "check", **fields), headers={"X-CSRF-Token": csrf}
        )
        assert check.json() == {
            "problems": {row: [f"{problem} (found {found})"]},
            "general": [],
            "publishable": False,
            "allowsAny": False,
        }
        for do in ("save", "publish"):
            refused = await browser.post(path, data=_draft(csrf, do, **fields))
            assert refused.status_code == 400 and f"{problem} (found {found})" in said(refused)
            draft = _pay_draft(engine, org.organization_id)
            assert (draft.status, action_store.spec_of(draft).rules) == (ActionVersionStatus.DRAFT, [])
        fine = await browser.post(path, data=_draft(csrf, "save"))
        assert (fine.status_code, fine.headers["location"]) == (303, f"{path}?notice=saved")
        fine = await browser.get(fine.headers["location"])
    assert fine.status_code == 200 and "The draft is saved." in fine.text
    assert action_store.spec_of(_pay_draft(engine, org.organization_id)).rules[0].name == "small"


@pytest.mark.parametrize(
    ("form", "why"),
    [
        ({"name": "Pay\u202erent", "description": ""}, "The name holds characters it may not: U+202E."),
        ({"name": "Pay" + FAKE_LINE, "description": ""}, "The name holds characters it may not: U+000A."),
        (
            {"name": "Pay", "description": "Rent\u2066"},
            "The description holds characters it may not: U+2066.",
        ),
    ],
)
async def test_an_actions_name_is_one_line_and_its_description_has_no_bidi(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine, form: dict[str, str], why: str
) -> None:
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.OWNER, "owner")
        refused = await browser.post("/dashboard/actions", data={"csrf": csrf, **form})
        multiline = await browser.post(
            "/dashboard/actions", data={"csrf": csrf, "name": "Pay", "description": "Rent\r\nmonthly"}
        )
    assert refused.status_code == 400 and why in said(refused)
    assert multiline.status_code == 303
    assert _pay_draft(engine, org.organization_id).content["description"] == "Rent\nmonthly"


async def test_a_version_stored_before_the_rule_is_copied_shown_escaped_and_not_published(
    app: FastAPI, ctx: Context, org: Credentials, engine: Engine
) -> None:
    """A new version copies the newest one as it is (a 500 if the copy were held to the rule): the
    editor shows each problem beside its row, escaped, and publishing it is refused."""
    raw = {**RENT, "rules": [{**RENT["rules"][0], "description": "Never \u202emore"}]}
    action_id, _ = published(engine, org.organization_id, raw)  # stored before the rule
    key = action_id.rsplit(":", 1)[1]
    async with page_client(app) as browser:
        _, csrf = await log_in_as(browser, ctx, org, MemberRole.DEVELOPER, "editor")
        copied = await browser.post(f"/dashboard/actions/{key}/versions", data={"csrf": csrf})
        assert copied.status_code == 303, copied.text[-1500:]
        path = copied.headers["location"]
        page = await browser.get(path)
        assert page.status_code == 200 and "Never \\u202emore" in page.text and "\u202e" not in page.text
        assert f"description {MULTILINE} (found U+202E)" in said(page)
    version = action_store.version_by_number(engine, org.organization_id, action_id, 2)
    assert version is not None
    with pytest.raises(PublishRefused) as why:
        actions.publish(ctx, Actor.shell_operator("tests"), version.id, org.organization_id)
    assert why.value.problems == [f"rules.0.description {MULTILINE} (found U+202E)"]
