"""store.orgs: API keys' names, descriptions and last use, stored with the key, read back with it
when a signed call resolves it, and ``record_key_use`` moving each key's last use forward only, for
several keys in one write, whatever order the writes of several API processes land in; the origins
an organization may allow to frame the approval page."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import Engine

from core.secretbox import SecretCipher
from core.settings import Settings
from store import orgs
from store.orgs import check_frame_origin
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


@pytest.mark.parametrize(
    ("origin", "loopback", "expected"),
    [
        ("https://app.example.com", False, "https://app.example.com"),
        ("HTTPS://App.Example.com:8443/", False, "https://app.example.com:8443"),
        ("http://localhost:5173", True, "http://localhost:5173"),
        ("http://127.0.0.1:8080", True, "http://127.0.0.1:8080"),
    ],
)
def test_allowed_frame_origins(origin: str, loopback: bool, expected: str) -> None:
    assert check_frame_origin(origin, loopback) == expected


@pytest.mark.parametrize(
    "origin",
    [
        "http://app.example.com",
        "http://localhost:5173",
        "https://app.example.com/path",
        "app.example.com",
        "https://user@app.example.com",
        "https://app.example.com?x=1",
        "javascript:alert(1)",
        "https://",
        "https://app.example.com:99999",
        "*",
    ],
)
def test_refused_frame_origins(origin: str) -> None:
    with pytest.raises(ValueError):
        check_frame_origin(origin, allow_loopback_http=False)
