"""The service on a real port for browser tests: the app under uvicorn and a worker of its own
that sends codes over SMTP to the test mailbox and by SMS to a fake provider speaking the HTTP
adapter's contract. One per test session, on SQLite, in development (``make run``'s environment),
so the development identity provider's page is there for the journeys that check identity."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from threading import Thread
from typing import Any

import httpx
import pytest
import pytest_asyncio
import uvicorn
from pydantic import SecretStr
from sqlalchemy import Engine
from temporalio.client import Client

from api.app import create_app
from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from tests.support.api_client import LIVE_LIMITS, Credentials, SignedClient
from tests.support.ports import free_port
from tests.support.smtp_server import SmtpServer
from worker import build_worker


class SmsProvider:
    """A fake SMS provider speaking the adapter's contract (``adapters.delivery.HttpSmsTransport``):
    it records each ``{to, text}`` with its Authorization header and answers 200, or the status
    set for a number with ``answer``."""

    TOKEN = "sms-test-token"

    def __init__(self) -> None:
        self.received: list[dict[str, Any]] = []
        self.statuses: dict[str, int] = {}
        provider = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                provider.received.append({**body, "authorization": self.headers.get("Authorization")})
                self.send_response(provider.statuses.get(body["to"], 200))
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/send"
        Thread(target=self._server.serve_forever, daemon=True).start()

    def answer(self, number: str, status: int) -> None:
        self.statuses[number] = status

    def to(self, number: str) -> list[dict[str, Any]]:
        return [m for m in self.received if m["to"] == number]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@dataclass
class LiveStack:
    url: str
    settings: Settings
    engine: Engine
    temporal: Client
    smtp: SmtpServer
    sms: SmsProvider
    http: httpx.AsyncClient

    def new_org(self) -> Credentials:
        from tests.conftest import new_org

        return new_org(self.engine, SecretCipher(self.settings.master_key_bytes()), self.settings)

    def api(self, creds: Credentials) -> SignedClient:
        return SignedClient(self.http, creds)


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def live(
    db_url: str, engine: Engine, settings: Settings, temporal: Client, smtp_server: SmtpServer
) -> AsyncIterator[LiveStack]:
    if not db_url.startswith("sqlite"):
        pytest.skip(
            "browser journeys run on SQLite only: the pages read through the same store "
            "functions the PostgreSQL tests cover"
        )
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    sms = SmsProvider()
    stack_settings = settings.model_copy(
        update={
            # as `make run` serves it: the development identity provider's page is served only then
            "environment": Environment.DEVELOPMENT,
            "email_transport": "smtp",
            "smtp_host": smtp_server.host,
            "smtp_port": smtp_server.port,
            "sms_transport": "http",
            "sms_url": sms.url,
            "sms_token": SecretStr(SmsProvider.TOKEN),
            "task_queue": f"mandatum-live-{uuid.uuid4().hex[:8]}",
            "public_url": url,
        }
    )
    with ThreadPoolExecutor(max_workers=8) as executor:
        async with build_worker(temporal, engine, stack_settings.task_queue, executor, stack_settings):
            app = create_app(stack_settings, temporal=temporal)
            server = uvicorn.Server(
                uvicorn.Config(
                    app,
                    host="127.0.0.1",
                    port=port,
                    log_level="warning",
                    access_log=False,
                    server_header=False,
                )
            )
            serving = asyncio.create_task(server.serve())
            while not server.started:
                if serving.done():
                    serving.result()
                await asyncio.sleep(0.02)
            try:
                async with httpx.AsyncClient(base_url=url, timeout=30, limits=LIVE_LIMITS) as client:
                    yield LiveStack(url, stack_settings, engine, temporal, smtp_server, sms, client)
            finally:
                server.should_exit = True
                await serving
                sms.stop()
