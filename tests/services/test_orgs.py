"""services.orgs and the command line over it: each state change by a named actor (the command's
operator), with the store's refusals as typed errors in the same words."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from cli import common
from cli.main import app
from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import orgs as organizations
from services.context import Context
from services.errors import Invalid, NotFound
from store import orgs
from tests.support.api_client import Credentials

ALICE = Actor.shell_operator("alice")


def test_organization_settings_and_keys_through_the_service(ctx: Context, engine: Engine) -> None:
    org, first = organizations.create_organization(ctx, ALICE, "Acme", 7)
    assert orgs.get_organization(engine, org.id).request_rate_per_minute == 7
    organizations.set_request_rate(ctx, ALICE, org.id, 9)
    organizations.set_presentation_minutes(ctx, ALICE, org.id, 12)
    saved = organizations.set_frame_origins(ctx, ALICE, org.id, ["https://App.Example.com"])
    stored = orgs.get_organization(engine, org.id)
    assert (stored.request_rate_per_minute, stored.presentation_minutes) == (9, 12)
    assert saved == stored.frame_origins == ["https://app.example.com"]
    second = organizations.create_key(ctx, ALICE, org.id)
    rotated = organizations.rotate_key(ctx, ALICE, second.key_id)
    assert rotated.signature_secret != second.signature_secret
    organizations.revoke_key(ctx, ALICE, first.key_id)
    live = {k.id: k.revoked_at for k in orgs.list_keys(engine, org.id)}
    assert live[first.key_id] is not None and live[second.key_id] is None


def test_refusals_keep_the_stores_words(ctx: Context, org: Credentials) -> None:
    with pytest.raises(NotFound, match="not found"):
        organizations.set_request_rate(ctx, ALICE, "0" * 24, 5)
    with pytest.raises(Invalid, match="1 to 60 minutes"):
        organizations.set_presentation_minutes(ctx, ALICE, org.organization_id, 61)
    with pytest.raises(Invalid):
        organizations.set_frame_origins(ctx, ALICE, org.organization_id, ["https://*.example.com"])
    with pytest.raises(NotFound):
        organizations.rotate_key(ctx, ALICE, "no-such-key")


def test_a_command_acts_as_the_operator_running_it(
    settings: Settings,
    engine: Engine,
    cipher: SecretCipher,
    org: Credentials,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(common, "context", lambda: (settings, engine, cipher))
    monkeypatch.setattr(common.getpass, "getuser", lambda: "carol")
    seen: list[Actor] = []
    real = organizations.set_request_rate

    def spy(ctx: Context, actor: Actor, *args: Any) -> None:
        seen.append(actor)
        real(ctx, actor, *args)

    monkeypatch.setattr(organizations, "set_request_rate", spy)
    result = CliRunner().invoke(
        app, ["org", "set-rate", "--org", org.organization_id, "--request-rate", "11"]
    )
    assert result.exit_code == 0, result.output
    assert seen == [Actor.shell_operator("carol")]
    assert orgs.get_organization(engine, org.organization_id).request_rate_per_minute == 11
    # a user name that cannot be an actor id still gives an operator
    monkeypatch.setattr(common.getpass, "getuser", lambda: "bad:name")
    assert common.operator() == Actor.shell_operator("unknown")
    failed = CliRunner().invoke(app, ["org", "set-rate", "--org", "0" * 24, "--request-rate", "5"])
    assert failed.exit_code == 1 and "not found" in failed.output


@pytest.mark.parametrize(
    ("name", "description", "problems"),
    [
        ("", "", ["The key's name is 1 to 80 characters (it has 0)."]),
        ("\t \n", "", ["The key's name is 1 to 80 characters (it has 0)."]),
        ("k" * 81, "", ["The key's name is 1 to 80 characters (it has 81)."]),
        ("a\x1bb", "", ["The key's name must be one line of printable characters: it holds U+001B."]),
        ("a\x85b", "", ["The key's name must be one line of printable characters: it holds U+0085."]),
        ("a\u2066b", "", ["The key's name must be one line of printable characters: it holds U+2066."]),
        ("ok", "d" * 501, ["The description is at most 500 characters (it has 501)."]),
        ("ok", "a\tb", ["The description must be one line of printable characters: it holds U+0009."]),
        (
            "",
            "a\nb",
            [
                "The key's name is 1 to 80 characters (it has 0).",
                "The description must be one line of printable characters: it holds U+000A.",
            ],
        ),
    ],
)
def test_a_key_label_is_checked_with_every_problem_named(
    ctx: Context, org: Credentials, name: str, description: str, problems: list[str]
) -> None:
    with pytest.raises(Invalid) as refused:
        organizations.create_key(ctx, ALICE, org.organization_id, name=name, description=description)
    assert refused.value.message == problems
    assert [k.id for k in organizations.list_keys(ctx, org.organization_id)] == [org.key_id]  # none made
    with pytest.raises(Invalid) as again:
        organizations.describe_key(ctx, ALICE, org.key_id, name, description)
    assert again.value.message == problems


def test_a_key_label_is_trimmed_and_may_be_left_out(ctx: Context, org: Credentials) -> None:
    assert organizations.key_label(" " + "k" * 80 + " ", "  Ünïcode: ok 🙂 ") == ("k" * 80, "Ünïcode: ok 🙂")
    named = organizations.create_key(
        ctx, ALICE, org.organization_id, name=" Billing ", description=" Invoices "
    )
    unnamed = organizations.create_key(ctx, ALICE, org.organization_id)  # as the command line without --name
    keys = {k.id: (k.name, k.description) for k in organizations.list_keys(ctx, org.organization_id)}
    assert keys == {org.key_id: ("", ""), named.key_id: ("Billing", "Invoices"), unnamed.key_id: ("", "")}
    with pytest.raises(Invalid, match="needs a name too"):
        organizations.create_key(ctx, ALICE, org.organization_id, description="no name")
    with pytest.raises(NotFound):
        organizations.describe_key(ctx, ALICE, org.key_id, "Mine", "", org_id="0" * 24)
