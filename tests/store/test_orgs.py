"""API keys' names, descriptions and last use in the store: stored with the key, read back with it
when a signed call resolves it, and ``record_key_use`` moving each key's last use forward only, for
several keys in one write, whatever order the writes of several API processes land in."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import orgs
from tests.support.api_client import Credentials

NOON = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)


def _last_used(engine: Engine, org_id: str) -> dict[str, datetime | None]:
    return {k.id: k.last_used_at for k in orgs.list_keys(engine, org_id)}


def test_a_key_keeps_its_name_and_description(engine: Engine, cipher: SecretCipher, org: Credentials) -> None:
    issued = orgs.create_key(
        engine, cipher, org.organization_id, actor="operator:tests", name="Billing", description="Nightly"
    )
    assert (issued.name, issued.description) == ("Billing", "Nightly")
    keys = {
        k.id: (k.name, k.description, k.last_used_at) for k in orgs.list_keys(engine, org.organization_id)
    }
    assert keys == {org.key_id: ("", "", None), issued.key_id: ("Billing", "Nightly", None)}
    rotated = orgs.rotate_key(engine, cipher, issued.key_id, actor="operator:tests")
    assert (rotated.name, rotated.description) == ("Billing", "Nightly")  # shown with the new secret
    assert orgs.describe_key(engine, issued.key_id, "Billing", "Nightly", actor="operator:tests") is False
    assert orgs.describe_key(engine, issued.key_id, "Invoices", "", actor="operator:tests") is True
    (row,) = [k for k in orgs.list_keys(engine, org.organization_id) if k.id == issued.key_id]
    assert (row.name, row.description) == ("Invoices", "")


def test_last_use_moves_forward_only(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    second = orgs.create_key(engine, cipher, org.organization_id, actor="operator:tests")
    orgs.record_key_use(
        engine, {org.key_id: NOON, second.key_id: NOON + timedelta(minutes=3), "0" * 24: NOON}
    )
    assert _last_used(engine, org.organization_id) == {
        org.key_id: NOON,
        second.key_id: NOON + timedelta(minutes=3),
    }
    # another process's older write lands late; an equal one changes nothing; a newer one moves it
    orgs.record_key_use(engine, {org.key_id: NOON - timedelta(minutes=1), second.key_id: NOON})
    assert _last_used(engine, org.organization_id) == {
        org.key_id: NOON,
        second.key_id: NOON + timedelta(minutes=3),
    }
    orgs.record_key_use(engine, {org.key_id: NOON + timedelta(minutes=1)})
    orgs.record_key_use(engine, {})
    assert _last_used(engine, org.organization_id)[org.key_id] == NOON + timedelta(minutes=1)
    resolved = orgs.resolve_api_key(engine, cipher, org.api_key, settings.rotation_grace)
    assert resolved is not None and resolved.last_used_at == NOON + timedelta(minutes=1)
