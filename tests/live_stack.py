"""The service on a real port for browser tests: the app under uvicorn and a worker of its own
that sends codes over SMTP to the test mailbox. One per test session, on SQLite."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import httpx
import pytest
import pytest_asyncio
import uvicorn
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.secretbox import SecretCipher
from core.settings import Settings
from tests.helpers import Credentials, SignedClient
from tests.smtp_server import SmtpServer
from worker import build_worker


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LiveStack:
    url: str
    settings: Settings
    engine: Engine
    temporal: Client
    smtp: SmtpServer
    http: httpx.AsyncClient

    def new_org(self) -> Credentials:
        from tests.conftest import new_org
        return new_org(self.engine, SecretCipher(self.settings.master_key_bytes()), self.settings)

    def api(self, creds: Credentials) -> SignedClient:
        return SignedClient(self.http, creds)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def live(db_url: str, engine: Engine, settings: Settings, temporal: Client,
               smtp_server: SmtpServer) -> AsyncIterator[LiveStack]:
    if not db_url.startswith("sqlite"):
        pytest.skip("browser journeys run on SQLite only: the pages read through the same store "
                    "functions the PostgreSQL tests cover")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    stack_settings = settings.model_copy(update={
        "email_transport": "smtp", "smtp_host": smtp_server.host, "smtp_port": smtp_server.port,
        "task_queue": f"mandatum-live-{uuid.uuid4().hex[:8]}", "public_url": url})
    with ThreadPoolExecutor(max_workers=8) as executor:
        async with build_worker(temporal, engine, stack_settings.task_queue, executor, stack_settings):
            app = create_app(stack_settings, temporal=temporal)
            server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                                   access_log=False))
            serving = asyncio.create_task(server.serve())
            while not server.started:
                if serving.done():
                    serving.result()
                await asyncio.sleep(0.02)
            try:
                async with httpx.AsyncClient(base_url=url, timeout=30) as client:
                    yield LiveStack(url, stack_settings, engine, temporal, smtp_server, client)
            finally:
                server.should_exit = True
                await serving
