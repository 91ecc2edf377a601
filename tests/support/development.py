"""The development pages from a test's side: a client of the real app as ``make run`` serves it
(``MANDATUM_ENVIRONMENT=development``), the only environment that serves ``/dev/...``, on the
session's database and Temporal."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx
from temporalio.client import Client

from api.app import create_app
from core.settings import Environment, Settings


@asynccontextmanager
async def development_client(settings: Settings, temporal: Client) -> AsyncIterator[httpx.AsyncClient]:
    """A client of the app in development: the outbox and the development identity provider."""
    development = settings.model_copy(update={"environment": Environment.DEVELOPMENT})
    app = create_app(development, temporal=temporal)
    transport = httpx.ASGITransport(app=app, raise_app_exceptions=False)
    try:
        async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as client:
            yield client
    finally:
        app.state.ctx.engine.dispose()
