"""The FastAPI application: services made once in the lifespan, signed routes, one error shape.

``serve_app`` is what uvicorn runs (``uvicorn api.app:serve_app --factory``): the process's logging
and tracing set up once, then ``create_app``. Tests call ``create_app`` and keep their own logging."""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from functools import partial

from fastapi import FastAPI
from fastapi.responses import JSONResponse
from temporalio.client import Client

from api.auth import Authenticator, SignedRequestMiddleware
from api.docs_ui import install_docs
from api.errors import install_error_handlers
from api.headers import SecurityHeadersMiddleware
from api.health import readiness_answer
from api.key_use import KeyUse
from api.limits import JsonDepthMiddleware
from api.openapi import DESCRIPTION, operation_id
from api.openapi import install as install_openapi
from api.routes import (
    actions,
    activity,
    approvals,
    dashboard,
    dev,
    identity,
    journey,
    journey_trusted,
    mandates,
    me,
    not_offered,
    portal,
    presentations,
    requests,
    site,
    subject_identity,
    trusted_sessions,
    users,
)
from api.telemetry import ObservedFastAPI, observed_client, telemetry_config
from core.observe import metrics, tracing
from core.observe.logs import configure_logging
from core.settings import Environment, Settings, get_settings
from orchestration.temporal import build_client
from services import access
from services.context import Context
from services.setup import open_context

log = logging.getLogger("mandatum.api")


def freeze_startup_objects() -> None:
    """Move every object made so far (the modules, the app, its routes and schemas: about 250,000)
    out of the cyclic garbage collector's reach. Each full collection walked them all: measured
    on 2026-11-25 during the verify benchmark, full collections paused the API for up to 243 ms
    (a request's p99 several times over), and 32 ms once the startup objects were frozen. They
    live as long as the process, so nothing is kept that would have been freed."""
    gc.collect()  # what is garbage already is not frozen with the rest
    gc.freeze()


def create_app(settings: Settings | None = None, temporal: Client | None = None) -> FastAPI:
    """The app; ``temporal`` may be given (tests), otherwise it connects in the lifespan."""
    settings = settings or get_settings()
    ctx = open_context(settings, observed_client(temporal) if temporal is not None else None)
    key_use = KeyUse(partial(access.record_key_use, ctx))
    production = settings.environment is Environment.PRODUCTION
    app = ObservedFastAPI(
        title="Mandatum",
        version="0.1.0",
        description=DESCRIPTION,
        lifespan=_lifespan(ctx, key_use),
        docs_url=None,
        redoc_url=None,
        generate_unique_id_function=operation_id,
        telemetry=telemetry_config(),  # spans only when tracing is on (core.observe.tracing)
    )
    app.state.ctx = ctx
    app.state.authenticator = Authenticator(ctx, key_use)
    install_error_handlers(app, hsts=production)
    app.add_middleware(JsonDepthMiddleware)  # inside the signature check: it runs second
    app.add_middleware(SignedRequestMiddleware)
    app.add_middleware(SecurityHeadersMiddleware, hsts=production)  # outermost: every answer
    install_openapi(app)
    install_docs(app)
    _include_routes(app, ctx)
    return app


def _lifespan(ctx: Context, key_use: KeyUse) -> Callable[[FastAPI], AbstractAsyncContextManager[None]]:
    """What the app does as it starts (Temporal's client, the metrics server, the startup objects
    frozen) and as it stops (the keys' last use written, the rules' processes and the database's
    connections closed)."""
    settings = ctx.settings

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if ctx.temporal is None:
            # lazy: the API starts (and serves what needs no Temporal) while Temporal is down, and
            # connects on the first call that needs it; until then those calls answer 503
            ctx.temporal = observed_client(await build_client(settings, lazy=True))
        metrics_server = metrics.serve(settings.api_metrics_host, settings.api_metrics_port, "API")
        freeze_startup_objects()
        log.info(
            "API ready: Temporal at %s (connected on first use), database %s",
            settings.temporal_address,
            ctx.engine.url.render_as_string(hide_password=True),
        )
        try:
            yield
        finally:
            if metrics_server is not None:
                await asyncio.to_thread(metrics_server.close)
        await key_use.flush()  # the keys' last use not written yet
        await ctx.rules.close()  # the rules' evaluation processes
        ctx.engine.dispose()

    return lifespan


def _include_routes(app: FastAPI, ctx: Context) -> None:
    """The routers, in the order they match, then the health checks."""
    app.include_router(requests.router)
    app.include_router(actions.router)
    app.include_router(approvals.router)
    app.include_router(presentations.router)
    app.include_router(mandates.router)
    app.include_router(identity.router)
    app.include_router(me.router)
    app.include_router(activity.router)
    app.include_router(subject_identity.router)
    app.include_router(trusted_sessions.router)
    app.include_router(users.router)
    app.include_router(journey.router)
    app.include_router(journey_trusted.router)
    app.include_router(dev.router)
    app.include_router(portal.router)
    app.include_router(not_offered.router)
    app.include_router(dashboard.router)
    app.include_router(site.router)

    @app.get("/healthz", include_in_schema=False)
    async def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", include_in_schema=False)
    async def readyz() -> JSONResponse:
        return await readiness_answer(ctx)


def serve_app() -> FastAPI:
    """The app as a server process runs it: logs in ``MANDATUM_LOG_FORMAT`` (uvicorn's loggers
    included, its access log replaced by ``api.telemetry``'s), traces when an OTLP endpoint is set."""
    settings = get_settings()
    configure_logging(settings.log_format_resolved, settings.log_level)
    tracing.setup("mandatum-api")
    return create_app(settings)
