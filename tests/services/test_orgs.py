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
from tests.support.helpers import Credentials

ALICE = Actor.operator("alice")


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher) -> Context:
    return Context(settings, engine, cipher)


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
    assert seen == [Actor.operator("carol")]
    assert orgs.get_organization(engine, org.organization_id).request_rate_per_minute == 11
    # a user name that cannot be an actor id still gives an operator
    monkeypatch.setattr(common.getpass, "getuser", lambda: "bad:name")
    assert common.operator() == Actor.operator("unknown")
    failed = CliRunner().invoke(app, ["org", "set-rate", "--org", "0" * 24, "--request-rate", "5"])
    assert failed.exit_code == 1 and "not found" in failed.output
