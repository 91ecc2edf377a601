"""Changes to how an organization is set up are in its audit trail, each naming its actor, written
in the change's own transaction: API keys created, rotated, renamed and revoked; the webhook's settings;
the request rate, the VP lifetime and the frame origins; an action's publication. A record never
holds a secret, and a refused change writes none. An organization's setting-up (its creation with
its first key, the development example action) writes none."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import Engine
from typer.testing import CliRunner

from cli import common
from cli.main import app
from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from policy.actions import parse_action_spec
from services import actions, webhooks
from services import audit as audit_service
from services import orgs as organizations
from services.context import Context
from services.errors import Invalid
from store import audit, orgs
from store.audit_queries import ActivityFilter
from store.tables import AuditRecord
from tests.support.api_client import Credentials

MIA = Actor.member("mia")


async def _trail(ctx: Context, org_id: str) -> list[AuditRecord]:
    rows, _ = await audit_service.activity(ctx, org_id, ActivityFilter(), 0, 100)
    return list(reversed(rows))  # oldest first


def _words(records: list[AuditRecord]) -> str:
    return json.dumps([{"type": r.type, "actor": r.actor, "data": r.data} for r in records])


async def test_a_fresh_organization_has_an_empty_trail(ctx: Context, org: Credentials) -> None:
    """Its creation, its first key and the example action are its setting-up."""
    assert await _trail(ctx, org.organization_id) == []


async def test_key_changes_are_recorded_by_their_actor_without_a_secret(
    ctx: Context, engine: Engine, org: Credentials
) -> None:
    org_id = org.organization_id
    issued = organizations.create_key(ctx, MIA, org_id, name="Billing", description="Nightly invoices")
    rotated = organizations.rotate_key(ctx, MIA, issued.key_id)
    (first_rotation,) = [k.rotated_at for k in orgs.list_keys(engine, org_id) if k.id == issued.key_id]
    again = organizations.rotate_key(ctx, MIA, issued.key_id)
    organizations.describe_key(ctx, MIA, issued.key_id, "Billing", "Nightly invoices")  # no change
    organizations.describe_key(ctx, MIA, issued.key_id, "Invoices", "")
    organizations.revoke_key(ctx, Actor.shell_operator("olga"), issued.key_id)
    organizations.revoke_key(ctx, MIA, issued.key_id)  # already revoked: nothing changes
    with pytest.raises(Invalid):
        organizations.rotate_key(ctx, MIA, issued.key_id)  # refused: no record
    records = await _trail(ctx, org_id)
    key = {"keyId": issued.key_id, "expiresAt": None}
    (row,) = [k for k in orgs.list_keys(engine, org_id) if k.id == issued.key_id]
    rotated_at, revoked_at = audit.moment(row.rotated_at), audit.moment(row.revoked_at)
    first = audit.moment(first_rotation)
    assert first is not None and rotated_at is not None and first <= rotated_at and revoked_at is not None
    # each change with the values it replaced under 'previous' (never a secret: a rotation's time)
    assert [(r.type, r.actor, r.data) for r in records] == [
        ("API_KEY_CREATED", "member:mia", {**key, "name": "Billing", "description": "Nightly invoices"}),
        (
            "API_KEY_ROTATED",
            "member:mia",
            {**key, "name": "Billing", "rotatedAt": first, "previous": {"rotatedAt": None}},
        ),
        (
            "API_KEY_ROTATED",
            "member:mia",
            {**key, "name": "Billing", "rotatedAt": rotated_at, "previous": {"rotatedAt": first}},
        ),
        (
            "API_KEY_EDITED",
            "member:mia",
            {
                **key,
                "name": "Invoices",
                "description": "",
                "previous": {"name": "Billing", "description": "Nightly invoices"},
            },
        ),
        (
            "API_KEY_REVOKED",
            "operator:olga",
            {**key, "name": "Invoices", "revokedAt": revoked_at, "previous": {"revokedAt": None}},
        ),
    ]
    for secret in (issued.api_key, issued.signature_secret, rotated.signature_secret, again.signature_secret):
        assert secret not in _words(records)
    (check,) = audit_service.verify_chains(ctx, MIA, org_id)
    assert check.broken is None and check.records == 5


async def test_settings_and_the_webhook_are_recorded_with_their_new_values(
    ctx: Context, org: Credentials
) -> None:
    org_id = org.organization_id
    organizations.set_request_rate(ctx, MIA, org_id, 30)
    organizations.set_presentation_minutes(ctx, MIA, org_id, 15)
    saved = organizations.set_frame_origins(
        ctx, MIA, org_id, ["https://App.Example.com", "https://app.example.com"]
    )
    with pytest.raises(Invalid):
        organizations.set_presentation_minutes(ctx, MIA, org_id, 61)  # refused: no record
    generated = webhooks.configure(ctx, MIA, org_id, "http://127.0.0.1:9/hook?token=t0ps3cret#frag")
    webhooks.configure(ctx, MIA, org_id, "http://127.0.0.1:9/hook2", signature_secret="s" * 32)
    records = await _trail(ctx, org_id)
    assert [(r.type, r.actor) for r in records] == [("ORGANIZATION_SETTINGS_CHANGED", "member:mia")] * 3 + [
        ("WEBHOOK_CONFIGURED", "member:mia")
    ] * 2
    assert [r.data for r in records[:3]] == [
        {"setting": "requestRatePerMinute", "value": 30, "previous": 1000},
        {"setting": "presentationMinutes", "value": 15, "previous": 5},
        {"setting": "frameOrigins", "value": saved, "previous": []},
    ]
    assert saved == ["https://app.example.com"]
    # the first configuration generates all three; the second changes only the signature secret
    assert set(generated) == {"signature secret", "encryption secret", "salt"}
    endpoint = webhooks.endpoints(ctx, org_id)[0].id
    assert records[3].data == {
        "endpointId": endpoint,
        "url": "http://127.0.0.1:9/hook",
        "secretsChanged": ["signatureSecret", "encryptionSecret", "salt"],
        "added": True,
    }
    # a change names the URL before it (its query dropped too)
    assert records[4].data == {
        "endpointId": endpoint,
        "url": "http://127.0.0.1:9/hook2",
        "secretsChanged": ["signatureSecret"],
        "previous": {"url": "http://127.0.0.1:9/hook"},
    }
    words = _words(records)
    assert "t0ps3cret" not in words and "frag" not in words and "s" * 32 not in words
    for value in generated.values():
        assert value not in words


async def test_publishing_an_action_is_recorded_with_its_digest(ctx: Context, org: Credentials) -> None:
    spec, problems = parse_action_spec(
        {"name": "Pay rent", "userParams": [{"name": "max", "type": "number"}]}
    )
    assert spec is not None, problems
    action, draft = actions.create(ctx, MIA, org.organization_id, spec)
    # no rules, no limits: its mandates would allow any execution, so publishing asks to be sure
    with pytest.raises(actions.AllowsAnyExecution, match="allow any execution"):
        actions.publish(ctx, MIA, draft.id, org.organization_id)
    assert await _trail(ctx, org.organization_id) == []  # nothing published, nothing recorded
    published = actions.publish(ctx, MIA, draft.id, org.organization_id, allow_any=True)
    (record,) = await _trail(ctx, org.organization_id)  # creating a draft is not consequential
    assert (record.type, record.actor) == ("ACTION_PUBLISHED", "member:mia")
    assert record.data == {"actionId": action.id, "version": 1, "digestSRI": published.digest_sri}
    assert published.digest_sri and published.digest_sri.startswith("sha")
    # a later version: with the one new requests pinned until then, as 'previous'
    spec2, problems = parse_action_spec(
        {
            "name": "Pay rent",
            "userParams": [{"name": "max", "type": "number"}, {"name": "note", "type": "string"}],
        }
    )
    assert spec2 is not None, problems
    draft2 = actions.add_version(ctx, MIA, org.organization_id, action.id, spec2)
    second = actions.publish(ctx, MIA, draft2.id, org.organization_id, allow_any=True)
    assert second.digest_sri != published.digest_sri
    (_, later) = await _trail(ctx, org.organization_id)
    assert (later.type, later.actor) == ("ACTION_PUBLISHED", "member:mia")
    assert later.data == {
        "actionId": action.id,
        "version": 2,
        "digestSRI": second.digest_sri,
        "previous": {"version": 1, "digestSRI": published.digest_sri},
    }


async def test_a_command_records_the_operator_running_it(
    ctx: Context,
    engine: Engine,
    cipher: SecretCipher,
    org: Credentials,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(common, "context", lambda: (settings, engine, cipher))
    monkeypatch.setattr(common.getpass, "getuser", lambda: "root")
    key_id = orgs.list_keys(engine, org.organization_id)[0].id
    done = CliRunner().invoke(app, ["key", "rotate", "--key", key_id])
    assert done.exit_code == 0, done.output
    (record,) = await _trail(ctx, org.organization_id)
    assert (record.type, record.actor, record.data["keyId"]) == ("API_KEY_ROTATED", "operator:root", key_id)
