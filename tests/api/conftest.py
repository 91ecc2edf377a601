"""Fixtures of the HTTP tests: ``app``, the real app (ASGI, in process) on the test database
without a Temporal client (the dashboard's pages and forms need none); a module whose tests need
Temporal defines its own."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest_asyncio
from fastapi import FastAPI

from api.app import create_app
from core.settings import Settings


@pytest_asyncio.fixture
async def app(settings: Settings) -> AsyncIterator[FastAPI]:
    made = create_app(settings)
    yield made
    await made.state.ctx.rules.close()  # the evaluation processes a test started (no lifespan)
    made.state.ctx.engine.dispose()
