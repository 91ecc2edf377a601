"""The real `mandatum` command on a fresh SQLite database, and the credentials it prints at work."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from temporalio.client import Client

from api.app import create_app
from core.settings import Environment, Settings
from tests.support.api_client import Credentials, SignedClient, assert_error_shape
from tests.support.cli import ENTRY_POINT, MASTER_KEY, PUBLIC_URL, Cli, cli_env

DID_PREFIX = "did:web:cli.mandatum.test%3A8443:orgs:"


def test_entry_point_is_installed(tmp_path: Path) -> None:
    """The one run of the installed ``mandatum`` as a process of its own (every other test runs the
    same commands in-process): its help, and real work on a fresh database."""
    assert ENTRY_POINT.exists()
    done = subprocess.run([str(ENTRY_POINT), "--help"], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    for command in ("org", "key", "db"):
        assert command in done.stdout
    env = cli_env(f"sqlite:///{tmp_path / 'smoke.db'}", tmp_path / "var")
    upgraded = subprocess.run(
        [str(ENTRY_POINT), "db", "upgrade"], env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert upgraded.returncode == 0 and "up to date" in upgraded.stdout, upgraded.stderr
    listed = subprocess.run(
        [str(ENTRY_POINT), "org", "list", "--json"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert listed.returncode == 0 and json.loads(listed.stdout) == [], listed.stderr


def test_org_create_json_and_text(cli: Cli) -> None:
    (code, out, err), (text_code, text, text_err), (again, _, again_err) = cli.run_all(
        (("org", "create", "--name", "Acme Payments", "--json"), {}),
        (("org", "create", "--name", "Text Org", "--request-rate", "120"), {}),
        (("db", "upgrade"), {}),  # idempotent
    )
    assert code == 0 and text_code == 0 and again == 0, (err, text_err, again_err)
    created = json.loads(out)
    assert re.fullmatch(r"[0-9a-f]{24}", created["organizationId"])
    assert created["did"] == DID_PREFIX + created["organizationId"]
    assert created["name"] == "Acme Payments"
    assert created["apiKey"].startswith("mdt_") and len(created["apiKey"]) > 40
    assert len(created["signatureSecret"]) >= 40 and created["signatureSecret"] != created["apiKey"]
    assert re.fullmatch(r"[0-9a-f]{24}", created["keyId"])

    assert "not shown again" in text
    text_id = re.search(r"organizationId\s+([0-9a-f]{24})", text)
    assert text_id and re.search(r"signatureSecret\s+\S{40,}", text)

    listed = {o["organizationId"]: o for o in cli.json("org", "list")}
    assert listed[created["organizationId"]] == {
        "organizationId": created["organizationId"],
        "name": "Acme Payments",
        "did": created["did"],
        "requestRatePerMinute": 60,
        "apiVersion": None,
    }
    assert listed[text_id.group(1)]["requestRatePerMinute"] == 120


BAD = "0" * 24
FAILURES: list[tuple[tuple[str, ...], dict[str, str], int, str]] = [
    # (arguments, extra environment, exit code, what stderr must say)
    (("org", "create", "--name", "", "--json"), {}, 1, "error: organization name is required"),
    (("org", "create", "--name", "   "), {}, 1, "error: organization name is required"),
    (("org", "create", "--name", "x" * 201), {}, 1, "at most 200 characters"),
    (("org", "create", "--name", "Bad rate", "--request-rate", "0"), {}, 2, "--request-rate"),
    (("org", "create"), {}, 2, "--name"),
    (("key", "create", "--org", BAD), {}, 1, f"error: organization {BAD} not found"),
    (
        ("key", "create", "--org", BAD, "--expires-at", "2020-01-01"),
        {},
        1,
        "--expires-at must be in the future",
    ),
    (("key", "create", "--org", BAD, "--name", " "), {}, 1, "error: The key's name is 1 to 80 characters"),
    (("key", "create", "--org", BAD, "--name", "a\x1bb"), {}, 1, "one line of printable characters"),
    (("key", "create", "--org", BAD, "--description", "no name"), {}, 1, "needs a name too"),
    (("key", "list", "--org", BAD), {}, 1, f"error: organization {BAD} not found"),
    (("key", "rotate", "--key", BAD), {}, 1, f"error: API key {BAD} not found"),
    (("key", "revoke", "--key", BAD), {}, 1, f"error: API key {BAD} not found"),
    (("org", "set-rate", "--org", BAD, "--request-rate", "5"), {}, 1, f"error: organization {BAD} not found"),
    (("org", "list"), {"MANDATUM_MASTER_KEY": "c2hvcnQ="}, 1, "32 bytes"),
    (
        ("org", "list"),
        {"MANDATUM_ENVIRONMENT": "production", "MANDATUM_MASTER_KEY": "changeme"},
        1,
        "MANDATUM_MASTER_KEY must be set to a real key in production",
    ),
]


def test_failures_exit_non_zero_with_a_clear_message(cli: Cli) -> None:
    before = cli.json("org", "list")
    results = cli.run_all(*((args, env) for args, env, _, _ in FAILURES))
    for (args, _, code, message), (got_code, out, err) in zip(FAILURES, results, strict=True):
        assert got_code == code, (args, out, err)
        assert message in err, (args, err)
        assert "Traceback" not in err, (args, err)
        assert out == "", (args, out)
    assert cli.json("org", "list") == before  # nothing was created


def test_unmigrated_database_fails_with_a_hint(tmp_path: Path) -> None:
    tool = Cli(cli_env(f"sqlite:///{tmp_path / 'empty.db'}", tmp_path / "var"), "", tmp_path)
    done = tool.run("org", "create", "--name", "Too early")
    assert done.returncode == 1 and "mandatum db upgrade" in done.stderr
    assert "Traceback" not in done.stderr


def test_set_rate_and_key_expiry(cli: Cli) -> None:
    org = cli.json("org", "create", "--name", "Rate Org")
    (rate, _, rate_err), (key, key_out, key_err), (zero, _, zero_err) = cli.run_all(
        (("org", "set-rate", "--org", org["organizationId"], "--request-rate", "7"), {}),
        (
            (
                "key",
                "create",
                "--org",
                org["organizationId"],
                "--expires-at",
                "2999-01-01T00:00:00",
                "--json",
            ),
            {},
        ),
        (("org", "set-rate", "--org", org["organizationId"], "--request-rate", "0"), {}),
    )
    assert rate == 0, rate_err
    assert key == 0 and json.loads(key_out)["expiresAt"] == "2999-01-01T00:00:00+00:00", key_err
    assert zero == 1 and "at least 1" in zero_err
    listed = {o["organizationId"]: o for o in cli.json("org", "list")}
    assert listed[org["organizationId"]]["requestRatePerMinute"] == 7


# --- the printed credentials against the API on the same database ---------------------------------


@pytest.fixture
async def cli_http(cli: Cli, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(
        environment=Environment.TEST,
        var_dir=cli.var_dir,
        database_url=cli.database_url,
        master_key=MASTER_KEY,
        public_url=PUBLIC_URL,
        auth_cache_seconds=0,
        task_queue="mandatum-cli-test",
    )
    app = create_app(settings, temporal=temporal)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url=PUBLIC_URL) as client:
        yield client
    app.state.ctx.engine.dispose()


def _client(
    http: httpx.AsyncClient, org: dict[str, Any], key: dict[str, Any], secret: str | None = None
) -> SignedClient:
    return SignedClient(
        http,
        Credentials(
            org["organizationId"], key["keyId"], key["apiKey"], secret or key["signatureSecret"], org["did"]
        ),
    )


async def test_key_lifecycle_and_printed_credentials_at_work(cli: Cli, cli_http: httpx.AsyncClient) -> None:
    org = cli.json("org", "create", "--name", "Live Org")
    first = _client(cli_http, org, org)
    resp = await first.get("/request")
    assert resp.status_code == 200, resp.text
    assert resp.json() == {"data": [], "totalPages": 0}

    key = cli.json(
        "key", "create", "--org", org["organizationId"], "--name", " CI runner ", "--description", "GitHub"
    )
    assert (key["name"], key["description"]) == ("CI runner", "GitHub")
    assert key["organizationId"] == org["organizationId"]
    assert key["keyId"] != org["keyId"] and key["apiKey"] != org["apiKey"]
    assert key["apiKey"].startswith("mdt_") and key["signatureSecret"] and key["expiresAt"] is None
    second = _client(cli_http, org, key)
    assert (await second.get("/request")).status_code == 200

    rotated = cli.json("key", "rotate", "--key", key["keyId"])
    assert rotated["keyId"] == key["keyId"] and rotated["organizationId"] == org["organizationId"]
    assert rotated["signatureSecret"] not in ("", key["signatureSecret"])
    assert rotated["previousSecretValidHours"] == 24
    assert "apiKey" not in rotated  # the API key is kept, never re-shown
    assert (await _client(cli_http, org, key, rotated["signatureSecret"]).get("/request")).status_code == 200
    assert (await second.get("/request")).status_code == 200  # the old secret, within 24 hours

    revoked = cli.json("key", "revoke", "--key", key["keyId"])
    assert revoked["keyId"] == key["keyId"] and revoked["revokedAt"].startswith("20")
    assert_error_shape(await second.get("/request"), 401)
    assert_error_shape(await _client(cli_http, org, key, rotated["signatureSecret"]).get("/request"), 401)
    assert (await first.get("/request")).status_code == 200  # the organization's other key

    (again, _, again_err), (listed, listing, _), (orgs_code, orgs_out, _) = cli.run_all(
        (("key", "rotate", "--key", key["keyId"]), {}),
        (("key", "list", "--org", org["organizationId"], "--json"), {}),
        (("org", "list", "--json"), {}),
    )
    assert again == 1 and "revoked" in again_err
    assert listed == 0 and orgs_code == 0
    keys = {k["keyId"]: k for k in json.loads(listing)}
    assert set(keys) == {org["keyId"], key["keyId"]}
    assert keys[key["keyId"]]["revokedAt"] is not None and keys[key["keyId"]]["rotatedAt"] is not None
    assert keys[org["keyId"]]["revokedAt"] is None
    assert [(k["name"], k["description"]) for k in (keys[org["keyId"]], keys[key["keyId"]])] == [
        ("", ""),  # the organization's first key is unnamed
        ("CI runner", "GitHub"),
    ]
    for secret in (org["apiKey"], key["apiKey"], org["signatureSecret"], rotated["signatureSecret"]):
        assert secret not in listing
    # the first call pinned the organization's API version
    pinned = {o["organizationId"]: o for o in json.loads(orgs_out)}[org["organizationId"]]["apiVersion"]
    assert pinned == resp.headers["API-Version"]

    cli.json("key", "revoke", "--key", org["keyId"])
    assert_error_shape(await first.get("/request"), 401)


async def test_credentials_of_another_database_do_not_work(
    cli_http: httpx.AsyncClient, api: SignedClient
) -> None:
    foreign = SignedClient(cli_http, api.creds)
    assert_error_shape(await foreign.get("/request"), 401)


def test_org_create_takes_the_default_rate_from_settings(cli: Cli) -> None:
    code, out, err = cli.run_all(
        (
            ("org", "create", "--name", "Defaulted", "--json"),
            {"MANDATUM_DEFAULT_REQUEST_RATE_PER_MINUTE": "25"},
        ),
    )[0]
    assert code == 0, err
    org_id = json.loads(out)["organizationId"]
    listed = {o["organizationId"]: o for o in cli.json("org", "list")}
    assert listed[org_id]["requestRatePerMinute"] == 25


def test_operators_create_list_disable_and_enable(cli: Cli) -> None:
    (code, out, err), (dup, _, dup_err), (bad, _, bad_err) = cli.run_all(
        (("operator", "create", "Olga@Ops.example.com", "--json"), {}),
        (("operator", "create", "olga@ops.example.com"), {}),
        (("operator", "create", "not an address"), {}),
    )
    assert code == 0, err
    made = json.loads(out)
    assert made["email"] == "olga@ops.example.com" and re.fullmatch(r"[0-9a-f]{24}", made["memberId"])
    assert made["setPasswordLink"].startswith(f"{PUBLIC_URL}/dashboard/set-password/")
    assert (dup, bad) == (1, 1) and "already a member" in dup_err and "error:" in bad_err
    [listed] = [s for s in cli.json("operator", "list") if s["memberId"] == made["memberId"]]
    assert (listed["email"], listed["disabled"], listed["secondFactor"]) == (
        "olga@ops.example.com",
        False,
        False,
    )
    # the command's first name still works for scripts written before it was renamed
    assert cli.json("staff", "disable", "olga@ops.example.com")["disabled"] is True
    assert [s["disabled"] for s in cli.json("operator", "list") if s["memberId"] == made["memberId"]] == [
        True
    ]
    assert cli.json("operator", "enable", "olga@ops.example.com")["disabled"] is False
    missing = cli.run("operator", "disable", "nobody@ops.example.com")
    assert missing.returncode == 1 and "no operator" in missing.stderr
