"""What the scaled-shape tests share: a throw-away PostgreSQL database (they skip without one) and
the settings every process of the shape runs with."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine
from temporalio.testing import WorkflowEnvironment

from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from store import audit
from store.db import make_engine, migrate
from tests.conftest import PG_ADMIN_URL, PG_AVAILABLE, _postgres_database

MASTER_KEY = "c2NhbGVkLXNoYXBlLW1hc3Rlci1rZXktMzItYnl0ZXM="  # 32 bytes, base64
PUBLIC_URL = "https://scale.mandatum.test"  # what a load balancer in front of both APIs would be


@pytest.fixture
def pg_url() -> Iterator[str]:
    if not PG_AVAILABLE:
        pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: the scaled shape runs on it only")
    with _postgres_database() as url:
        migrate(url)
        yield url


@pytest.fixture
def stack_settings(pg_url: str, dev_env: WorkflowEnvironment, tmp_path: Path) -> Settings:
    """What every process of the shape shares: database, Temporal, task queue, key, public URL."""
    return Settings(
        environment=Environment.TEST,
        var_dir=tmp_path / "var",
        database_url=pg_url,
        master_key=MASTER_KEY,
        temporal_address=dev_env.client.service_client.config.target_host,
        task_queue=f"mandatum-scale-{uuid.uuid4().hex[:8]}",
        public_url=PUBLIC_URL,
    )


@pytest.fixture
def pg_engine(stack_settings: Settings) -> Iterator[Engine]:
    engine = make_engine(stack_settings.database_url)
    audit.use_service_key(engine, SecretCipher(stack_settings.master_key_bytes()), stack_settings)
    yield engine
    engine.dispose()
