"""Text people read or that is signed, through the command line (issue 30, item 5): an
organization's name, an action's spec file (the place the dashboard's editor goes through too,
``services.actions``), a draft stored before the rule when it is published, and the webhook's URL
are refused with ``core.text``'s rule naming the field, exit 1, nothing made. What was stored before
the rule is printed escaped (``\\u202e``), never raw to the terminal."""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine

from core.kinds import ActionVersionStatus
from core.secretbox import SecretCipher
from store import actions as action_store
from store import orgs
from store.db import make_engine
from tests.support.actions import RENT, spec
from tests.support.cli import MASTER_KEY, Cli

ONE_LINE = "must be one line without control, line separator or bidi override characters"
MULTILINE = "must not hold control characters other than line breaks, nor line separator or bidi override"
FAKE_LINE = "\nerror: organization 000000000000000000000000 not found"


@pytest.fixture
def engine(cli: Cli) -> Iterator[Engine]:
    """The command's own database, to write what was stored before the rule and to look."""
    made = make_engine(cli.database_url)
    yield made
    made.dispose()


@pytest.fixture
def org_id(cli: Cli) -> str:
    return str(cli.json("org", "create", "--name", "Text Org")["organizationId"])


def refused(cli: Cli, *args: str) -> str:
    done = cli.run(*args)
    assert done.returncode == 1 and done.stdout == "", (args, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stderr


@pytest.mark.parametrize(
    ("name", "found"),
    [("Acme\u202eyaP", "U+202E"), ("Acme" + FAKE_LINE, "U+000A"), ("Acme\u2028Pay", "U+2028")],
)
def test_an_organizations_name_is_one_line(cli: Cli, name: str, found: str) -> None:
    before = cli.json("org", "list")
    said = refused(cli, "org", "create", "--name", name)
    assert f"error: organization name {ONE_LINE} (found {found})" in said
    assert cli.json("org", "list") == before


def _with(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(RENT)
    for path, value in changes.items():
        part, index, field = [*path.split("__"), "", ""][:3]
        if index:
            raw[part][int(index)][field] = value
        else:
            raw[part] = value
    return raw


BAD_SPECS = [
    (_with(name="Pay \u202erent"), f"name {ONE_LINE} (found U+202E)"),
    (_with(description="Rent\tmonthly"), f"description {MULTILINE} characters (found U+0009)"),
    (
        _with(executionParams__0__description="Amount \u2066x\u2069"),
        "executionParams.0.description " + MULTILINE,
    ),
    (_with(userParams__1__default=["Ann\u202e"]), f"userParams.1.default.0 {ONE_LINE} (found U+202E)"),
    (_with(rules__0__name="underMax" + FAKE_LINE), f"rules.0.name {ONE_LINE} (found U+000A)"),
    (
        _with(rules__0__description="Never \u202emore"),
        f"rules.0.description {MULTILINE} characters (found U+202E)",
    ),
    (
        _with(rules__1__expression="executionParams.payee in ['Ann\u202e'] || true"),
        f"rules.1.expression {MULTILINE} characters (found U+202E)",
    ),
]


@pytest.mark.parametrize("publish", [False, True])
@pytest.mark.parametrize(("raw", "why"), BAD_SPECS)
def test_a_spec_files_texts_are_held_to_the_rule(
    cli: Cli, org_id: str, tmp_path: Path, raw: dict[str, Any], why: str, publish: bool
) -> None:
    path = tmp_path / "action.json"
    path.write_text(json.dumps(raw), encoding="utf-8")
    flags = ("--publish",) if publish else ()
    said = refused(cli, "action", "create", "--org", org_id, "--file", str(path), *flags)
    assert why in said, said
    assert cli.json("action", "list", "--org", org_id) == []
    good = tmp_path / "good.json"
    good.write_text(json.dumps(RENT), encoding="utf-8")
    action_id = cli.json("action", "create", "--org", org_id, "--file", str(good))["actionId"]
    said = refused(cli, "action", "add-version", "--action", action_id, "--file", str(path), *flags)
    assert why in said, said
    [listed] = cli.json("action", "list", "--org", org_id)
    assert [v["number"] for v in listed["versions"]] == [1]


def test_a_draft_stored_before_the_rule_is_not_published(cli: Cli, org_id: str, engine: Engine) -> None:
    _, draft = action_store.create_action(
        engine, org_id, spec(_with(rules__0__description="Never \u202emore"))
    )
    said = refused(cli, "action", "publish", "--version", draft.id)
    assert f"cannot publish:\n  - rules.0.description {MULTILINE} characters (found U+202E)" in said
    stored = action_store.get_version(engine, draft.id)
    assert stored is not None and stored.status == ActionVersionStatus.DRAFT and stored.digest_sri is None


@pytest.mark.parametrize("url", ["https://93.184.216.34/\u202egnp", "https://93.184.216.34/a\u2029b"])
def test_a_webhook_url_holds_no_control_or_bidi_character(cli: Cli, org_id: str, url: str) -> None:
    said = refused(cli, "webhook", "set", "--org", org_id, "--url", url)
    assert "the webhook URL must not contain spaces, control or bidi override characters" in said
    assert "has no webhook" in refused(cli, "webhook", "show", "--org", org_id)


def test_what_was_stored_before_the_rule_is_printed_escaped(cli: Cli, engine: Engine) -> None:
    cipher = SecretCipher(base64.b64decode(MASTER_KEY))
    org, _ = orgs.create_organization(engine, cipher, "Acme\u202eyaP\x1b[2J")
    listed = cli.run("org", "list")
    assert listed.returncode == 0
    [line] = [line for line in listed.stdout.splitlines() if org.id in line]
    assert "Acme\\u202eyaP\\u001b[2J" in line
    assert "\u202e" not in listed.stdout and "\x1b" not in listed.stdout
    as_json = {o["organizationId"]: o["name"] for o in cli.json("org", "list")}
    assert as_json[org.id] == "Acme\u202eyaP\x1b[2J"  # the data itself, in JSON, is unchanged
