"""`mandatum action create|add-version|publish|list`: the real command on a fresh SQLite database."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from api.routes.actions import action_out
from policy.cel import parse
from policy.cost import declared_roots, estimate
from policy.params import Param
from store import actions as actions_store
from store.db import make_engine
from tests.support.actions import RENT
from tests.support.cli import Cli, cli_env
from trust.credentials import digest_sri

ACTION_URN = re.compile(r"^urn:via:action:[0-9a-f-]{36}$")
VERSION_URN = re.compile(r"^urn:via:action-version:[0-9a-f-]{36}$")

RENT_YAML = """\
name: Pay rent
description: Pay the monthly rent to an approved payee
executionParams:
  - {name: amount, type: number, description: Amount to pay}
  - {name: payee, type: string}
  - {name: at, type: timestamp}
userParams:
  - name: maxAmount
    type: number
  - name: notAfter
    type: timestamp
    default: 2030-01-01T00:00:00Z
rules:
  - name: underMax
    expression: executionParams.amount <= userParams.maxAmount
  - name: inTime
    expression: timestamp(executionParams.at) <= timestamp(userParams.notAfter)
"""


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    root = tmp_path_factory.mktemp("action-cli")
    url = f"sqlite:///{root / 'cli.db'}"
    tool = Cli(cli_env(url, root / "var"), url, root / "var")
    done = tool.run("db", "upgrade")
    assert done.returncode == 0, done.stderr
    return tool


@pytest.fixture(scope="module")
def org_id(cli: Cli) -> str:
    return str(cli.json("org", "create", "--name", "Actions Org")["organizationId"])


def write(tmp_path: Path, name: str, content: str | dict[str, Any]) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2))
    return str(path)


def test_create_publish_add_version_and_list(cli: Cli, org_id: str, tmp_path: Path) -> None:
    yaml_file = write(tmp_path, "rent.yaml", RENT_YAML)
    created = cli.json("action", "create", "--org", org_id, "--file", yaml_file)
    assert ACTION_URN.match(created["actionId"]) and VERSION_URN.match(created["versionId"])
    assert (created["number"], created["status"], created["digestSRI"]) == (1, "draft", None)
    action_id = created["actionId"]

    published = cli.json("action", "publish", "--action", action_id)  # its newest draft
    assert published["versionId"] == created["versionId"] and published["status"] == "published"
    assert published["digestSRI"].startswith("sha256-")

    json_file = write(tmp_path, "rent.json", {**RENT, "name": "Pay rent (JSON)"})
    v2 = cli.json("action", "add-version", "--action", action_id, "--file", json_file)
    assert (v2["number"], v2["status"]) == (2, "draft")
    v2_published = cli.json("action", "publish", "--version", v2["versionId"])
    assert v2_published["digestSRI"] != published["digestSRI"]

    listed = {a["actionId"]: a for a in cli.json("action", "list", "--org", org_id)}
    assert listed[action_id]["name"] == "Pay rent (JSON)"
    assert [v["number"] for v in listed[action_id]["versions"]] == [1, 2]

    text = cli.run("action", "list", "--org", org_id)
    assert text.returncode == 0 and action_id in text.stdout and "published" in text.stdout


def test_yaml_timestamps_stay_text(cli: Cli, org_id: str, tmp_path: Path) -> None:
    """YAML would read 2030-01-01T00:00:00Z as a date; the default must stay RFC 3339 text."""
    created = cli.json(
        "action", "create", "--org", org_id, "--publish", "--file", write(tmp_path, "t.yaml", RENT_YAML)
    )
    assert created["status"] == "published"


def test_a_version_without_rules_or_limits_is_published_only_when_allowed(
    cli: Cli, org_id: str, tmp_path: Path
) -> None:
    """Issue 34: its mandates would allow any execution; --publish stops before anything is made
    unless --allow-any-execution says so, and `action publish` asks the same."""
    open_ended = write(tmp_path, "any.json", {**RENT, "name": "Anything goes", "rules": []})
    before = len(cli.json("action", "list", "--org", org_id))
    refused = cli.run("action", "create", "--org", org_id, "--publish", "--file", open_ended)
    assert refused.returncode == 1 and "allow any execution" in refused.stderr
    assert "--allow-any-execution" in refused.stderr
    assert len(cli.json("action", "list", "--org", org_id)) == before  # nothing created
    draft = cli.json("action", "create", "--org", org_id, "--file", open_ended)
    again = cli.run("action", "publish", "--version", draft["versionId"])
    assert again.returncode == 1 and "allow any execution" in again.stderr
    done = cli.json("action", "publish", "--version", draft["versionId"], "--allow-any-execution")
    assert done["status"] == "published"


def test_failures_exit_1_with_clear_messages(cli: Cli, org_id: str, tmp_path: Path) -> None:
    missing_urn = "urn:via:action:00000000-0000-4000-8000-000000000000"
    names_before = [a["name"] for a in cli.json("action", "list", "--org", org_id)]
    bad_rules = {**RENT, "rules": [{"name": "undeclared", "expression": "executionParams.nope > 1"}]}
    draft = cli.json("action", "create", "--org", org_id, "--file", write(tmp_path, "bad.json", bad_rules))
    published = cli.json(
        "action", "create", "--org", org_id, "--publish", "--file", write(tmp_path, "ok.json", RENT)
    )
    cases: list[tuple[tuple[str, ...], str]] = [
        (("action", "create", "--org", org_id, "--file", str(tmp_path / "nope.yaml")), "file not found"),
        (
            ("action", "create", "--org", org_id, "--file", write(tmp_path, "a.txt", "x")),
            ".yaml, .yml or .json",
        ),
        (
            ("action", "create", "--org", org_id, "--file", write(tmp_path, "b.yaml", "name: [unclosed\n")),
            "YAML syntax error at line 2",
        ),
        (
            ("action", "create", "--org", org_id, "--file", write(tmp_path, "c.json", '{"name": "x",\n}')),
            "JSON syntax error at line 2",
        ),
        (
            ("action", "create", "--org", org_id, "--file", write(tmp_path, "d.yaml", "- a\n- b\n")),
            "must be a mapping",
        ),
        (
            (
                "action",
                "create",
                "--org",
                org_id,
                "--file",
                write(
                    tmp_path,
                    "e.json",
                    {"name": "", "userParams": [{"name": "1x", "type": "money"}], "colour": "red"},
                ),
            ),
            "the action is not valid:\n  - ",
        ),
        (("action", "create", "--org", "0" * 24, "--file", write(tmp_path, "f.json", RENT)), "not found"),
        (("action", "publish", "--version", draft["versionId"]), "cannot publish:\n  - "),
        (
            (
                "action",
                "create",
                "--org",
                org_id,
                "--publish",
                "--file",
                write(tmp_path, "h.json", bad_rules),
            ),
            "h.json: cannot publish:\n  - ",
        ),
        (("action", "publish", "--version", published["versionId"]), "already published"),
        (("action", "publish", "--action", published["actionId"]), "no draft version"),
        (("action", "publish"), "exactly one of --version or --action"),
        (
            ("action", "add-version", "--action", missing_urn, "--file", write(tmp_path, "g.json", RENT)),
            "not found",
        ),
        (("action", "list", "--org", "0" * 24), "not found"),
    ]
    results = cli.run_all(*((args, {}) for args, _ in cases))
    for (args, message), (code, out, err) in zip(cases, results, strict=True):
        assert code == 1, (args, out, err)
        assert message in err, (args, err)
        assert "Traceback" not in err, (args, err)
    invalid = results[5][2]
    for fragment in ("name", "userParams.0.name", "userParams.0.type", "colour"):
        assert fragment in invalid, invalid
    # a refused --publish stored nothing: only the two actions made above exist with that content
    names = [a["name"] for a in cli.json("action", "list", "--org", org_id)]
    assert names.count(RENT["name"]) == 2 + names_before.count(RENT["name"]), names


BOUNDED_YAML = """\
name: Pay a batch
executionParams:
  - {name: payees, type: array<string>, maxItems: 20, maxLength: 64}
  - {name: memo, type: string, maxLength: 140}
  - {name: amount, type: number}
userParams:
  - {name: allowed, type: array<string>, default: [], maxItems: 50}
rules:
  - name: known
    expression: executionParams.payees.all(p, p in userParams.allowed)
"""


def test_bounds_in_a_file_are_installed_and_shown(cli: Cli, org_id: str, tmp_path: Path) -> None:
    """maxLength and maxItems (issue 30) are part of the installed version, as ``GET /actions``
    shows it and its digestSRI covers it; a param without them shows none (the defaults apply)."""
    created = cli.json(
        "action", "create", "--org", org_id, "--publish", "--file", write(tmp_path, "b.yaml", BOUNDED_YAML)
    )
    assert created["status"] == "published"
    engine = make_engine(cli.database_url)
    try:
        view = actions_store.get_action(engine, org_id, created["actionId"])
        assert view is not None
        [version] = action_out(view).model_dump(mode="json")["versions"]
    finally:
        engine.dispose()
    assert version["executionParams"] == [
        {"name": "payees", "type": "array<string>", "maxLength": 64, "maxItems": 20},
        {"name": "memo", "type": "string", "maxLength": 140},
        {"name": "amount", "type": "number"},
    ]
    assert version["userParams"] == [
        {"name": "allowed", "type": "array<string>", "default": [], "maxItems": 50}
    ]
    content = {k: v for k, v in version.items() if k in {"name", "executionParams", "userParams", "rules"}}
    assert version["digestSRI"] == created["digestSRI"] == digest_sri(content)


def test_rules_over_the_budget_are_refused_naming_the_rule(cli: Cli, org_id: str, tmp_path: Path) -> None:
    """At 10,000 items, one pass over them may take more steps than one verification may: the
    publish checks refuse the rule by its name, whether --publish or publish later."""
    costly = {
        "name": "Costly batch",
        "executionParams": [{"name": "items", "type": "array<string>", "maxItems": 10_000}],
        "rules": [
            {"name": "some", "expression": "size(executionParams.items) > 0"},
            {"name": "each", "expression": "executionParams.items.all(x, x != '')"},
        ],
    }
    before = [a["name"] for a in cli.json("action", "list", "--org", org_id)]
    path = write(tmp_path, "costly.json", costly)
    refused = cli.run("action", "create", "--org", org_id, "--publish", "--file", path)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    steps = estimate(
        parse("executionParams.items.all(x, x != '')"),
        declared_roots([Param("items", "array<string>", max_items=10_000)], []),
    )
    assert refused.stderr == (
        f"error: {path}: cannot publish:\n  - rules.1 (each) may take up to {steps:,} steps at its params' "
        "maximum sizes, more than the 10,000 one verification may take: lower the maxItems or "
        "maxLength of the params it reads, or simplify it\n"
    )
    assert [a["name"] for a in cli.json("action", "list", "--org", org_id)] == before  # nothing stored

    draft = cli.json("action", "create", "--org", org_id, "--file", path)
    later = cli.run("action", "publish", "--version", draft["versionId"])
    assert (
        later.returncode == 1
        and f"cannot publish:\n  - rules.1 (each) may take up to {steps:,} steps" in later.stderr
    )
    fits = {**costly, "executionParams": [{"name": "items", "type": "array<string>", "maxItems": 1_000}]}
    added = cli.json(
        "action",
        "add-version",
        "--action",
        draft["actionId"],
        "--publish",
        "--file",
        write(tmp_path, "fits.json", fits),
    )
    assert (added["number"], added["status"]) == (2, "published")


LIMITS_YAML = """\
name: Pay suppliers
executionParams:
  - {name: amount, type: number}
  - {name: supplier, type: string}
userParams:
  - {name: monthlyLimit, type: number}
  - {name: label, type: string, default: none}
rules:
  - name: positive
    expression: executionParams.amount > 0
limits:
  - {name: uses, kind: executions, max: 5}
  - {name: monthly, kind: sum, param: amount, max: userParams.monthlyLimit, period: P1M, unit: EUR}
"""
EXAMPLE_LIMITS = [
    {"name": "uses", "kind": "executions", "max": 5},
    {
        "name": "monthly",
        "kind": "sum",
        "param": "amount",
        "max": "userParams.monthlyLimit",
        "period": "P1M",
        "unit": "EUR",
    },
]


def test_limits_in_a_file_are_installed_and_shown(cli: Cli, org_id: str, tmp_path: Path) -> None:
    """Use limits (issue 31) in a spec file: installed in the declared order, as ``GET /actions``
    shows them and the version's digestSRI covers them."""
    created = cli.json(
        "action", "create", "--org", org_id, "--publish", "--file", write(tmp_path, "l.yaml", LIMITS_YAML)
    )
    assert created["status"] == "published"
    engine = make_engine(cli.database_url)
    try:
        view = actions_store.get_action(engine, org_id, created["actionId"])
        assert view is not None
        [version] = action_out(view).model_dump(mode="json", exclude_none=True)["versions"]
    finally:
        engine.dispose()
    assert version["limits"] == EXAMPLE_LIMITS
    content = {k: v for k, v in version.items() if k not in {"id", "number", "digestSRI", "publishedAt"}}
    assert version["digestSRI"] == created["digestSRI"] == digest_sri(content)


def test_limit_problems_are_listed_per_limit(cli: Cli, org_id: str, tmp_path: Path) -> None:
    """Each limit's problems are named by its place (a shape the file cannot have) or its name (what
    publishing checks against the params); a refused --publish stores nothing."""
    before = [a["name"] for a in cli.json("action", "list", "--org", org_id)]
    shapeless = {
        "name": "Bad limits",
        "executionParams": [{"name": "amount", "type": "number"}],
        "limits": [
            {"name": "uses", "kind": "executions", "max": 5},
            {"name": "spend", "kind": "budget", "max": 10},
            {"name": "daily", "kind": "rate", "max": 2, "period": "P1Y"},
            {"name": "maxExecutions", "kind": "executions", "max": 3},
            {"name": "uses", "kind": "executions", "max": 1},
        ],
    }
    path = write(tmp_path, "shapeless.json", shapeless)
    refused = cli.run("action", "create", "--org", org_id, "--file", path)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr == (
        f"error: {path}: the action is not valid:\n"
        "  - limits[1].kind must be one of executions, sum, rate\n"
        "  - limits[2].period must be one of P1D, P1W, P1M, or absent for the mandate's life\n"
        "  - limits[3].name maxExecutions is the request's own bound: choose another name\n"
        "  - limits[4].name uses is declared twice\n"
    )
    unknown = {
        "name": "Unknown params",
        "executionParams": [{"name": "amount", "type": "number"}, {"name": "supplier", "type": "string"}],
        "userParams": [{"name": "label", "type": "string"}],
        "limits": [
            {"name": "total", "kind": "sum", "param": "amont", "max": 100},
            {"name": "bySupplier", "kind": "sum", "param": "supplier", "max": 100},
            {"name": "monthly", "kind": "sum", "param": "amount", "max": "userParams.cap", "period": "P1M"},
            {"name": "labelled", "kind": "rate", "max": "userParams.label", "period": "P1W"},
        ],
    }
    path = write(tmp_path, "unknown.json", unknown)
    refused = cli.run("action", "create", "--org", org_id, "--publish", "--file", path)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert refused.stderr == (
        f"error: {path}: cannot publish:\n"
        "  - limit total: executionParams has no param amont\n"
        "  - limit bySupplier: executionParams.supplier is a string; a sum needs a number\n"
        "  - limit monthly: userParams has no param cap\n"
        "  - limit labelled: userParams.label is a string; a max needs a number\n"
    )
    assert [a["name"] for a in cli.json("action", "list", "--org", org_id)] == before  # nothing stored
