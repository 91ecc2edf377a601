"""0032 (several webhook endpoints): an organization's one webhook becomes its first endpoint, with
every setting and sealed secret as it was, and its events belong to it; an organization without a
webhook keeps events without an endpoint. Downgrading gives each organization its oldest endpoint
back as its webhook."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import MetaData, Table, inspect

from core.ids import is_object_id
from store.db import alembic_config, make_engine, migrate
from tests.support.databases import fresh_database

WITH, WITHOUT = "a" * 24, "b" * 24


def _organizations_and_events(url: str, now: datetime) -> None:
    eng = make_engine(url)
    try:
        with eng.begin() as conn:
            org, config, event = (
                Table(n, MetaData(), autoload_with=conn)
                for n in ("organization", "webhook_config", "webhook_event")
            )
            for org_id in (WITH, WITHOUT):
                conn.execute(
                    org.insert().values(
                        id=org_id,
                        name="Org",
                        created_at=now,
                        request_rate_per_minute=60,
                        presentation_minutes=5,
                    )
                )
            conn.execute(
                config.insert().values(
                    organization_id=WITH,
                    url="https://hooks.example.com/in?token=t",
                    signature_secret_ciphertext=b"sealed signature",
                    encryption_secret_ciphertext=b"sealed encryption",
                    encryption_salt="salt",
                    updated_at=now,
                    previous_signature_secret_ciphertext=b"sealed previous",
                    previous_until=now + timedelta(hours=1),
                    enabled=False,
                    event_types=["credential"],
                )
            )
            conn.execute(
                event.insert(),
                [
                    {
                        "id": f"urn:via:event:{n}",
                        "organization_id": org_id,
                        "fact_key": f"test:{n}",
                        "event_type": "test",
                        "payload": {"id": n},
                        "created_at": now,
                        "state": "delivered",
                        "attempts": 1,
                    }
                    for n, org_id in (("1", WITH), ("2", WITH), ("3", WITHOUT))
                ],
            )
    finally:
        eng.dispose()


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_the_webhook_becomes_the_first_endpoint_and_back(backend: str, tmp_path: Path) -> None:
    now = datetime.now(UTC).replace(microsecond=0)
    with fresh_database(backend, tmp_path) as url:
        migrate(url)
        command.downgrade(alembic_config(url), "0031")
        _organizations_and_events(url, now)
        migrate(url)
        eng = make_engine(url)
        try:
            with eng.connect() as conn:
                endpoints = conn.exec_driver_sql(
                    "SELECT id, organization_id, url, signature_secret_ciphertext,"
                    " encryption_secret_ciphertext, encryption_salt, previous_signature_secret_ciphertext,"
                    " enabled, event_types, created_at"
                    " FROM webhook_endpoint"
                ).all()
                events = {
                    str(r[0]): r[1] for r in conn.exec_driver_sql("SELECT id, endpoint_id FROM webhook_event")
                }
            assert len(endpoints) == 1
            (endpoint_id, org_id, hook_url, signature, encryption, salt, previous, enabled, types, made) = (
                endpoints[0]
            )
            assert (
                is_object_id(endpoint_id)
                and org_id == WITH
                and hook_url == "https://hooks.example.com/in?token=t"
            )
            assert (bytes(signature), bytes(encryption), salt, bytes(previous)) == (
                b"sealed signature",
                b"sealed encryption",
                "salt",
                b"sealed previous",
            )
            assert not enabled and types in (["credential"], '["credential"]')  # JSON text on SQLite
            assert made is not None
            assert events == {
                "urn:via:event:1": endpoint_id,
                "urn:via:event:2": endpoint_id,
                "urn:via:event:3": None,
            }
            assert "webhook_config" not in inspect(eng).get_table_names()

            command.downgrade(alembic_config(url), "0031")
            eng.dispose()
            with eng.connect() as conn:
                back = conn.exec_driver_sql(
                    "SELECT organization_id, url, signature_secret_ciphertext, enabled FROM webhook_config"
                ).all()
            assert [(r[0], r[1], bytes(r[2]), bool(r[3])) for r in back] == [
                (WITH, "https://hooks.example.com/in?token=t", b"sealed signature", False)
            ]
            names = inspect(eng).get_table_names()
            assert "webhook_endpoint" not in names
            assert "endpoint_id" not in {c["name"] for c in inspect(eng).get_columns("webhook_event")}
        finally:
            eng.dispose()
