"""``/readyz``: whether this API process can serve everything now.

Ready means the database answers ``SELECT 1``, Temporal's frontend answers its health check (the
lifespan's lazy client connects on the way), and the database's Alembic revision is the head of
the installed migrations; each check within 2 s, all at once, anew on every call
(``orchestration.health``). An app without a Temporal client (only in process, when its lifespan
has not run: tests of routes that need no Temporal) is not ready: readiness never claims what it
did not check. ``/healthz`` stays the bare liveness answer.
"""

from __future__ import annotations

from functools import partial

from fastapi.responses import JSONResponse

from orchestration.health import check_all, database_answers, migrations_current, temporal_serving
from services.context import Context


async def readiness_answer(ctx: Context) -> JSONResponse:
    """200 ``{"status": "ready", "checks": {...}}``, or 503 naming what failed and why, briefly."""
    engine = ctx.engine
    readiness = await check_all(
        {
            "database": partial(database_answers, engine),
            "temporal": partial(temporal_serving, ctx.temporal),
            "migrations": partial(migrations_current, engine),
        },
        secrets=[engine.url.password or ""],
    )
    return JSONResponse(readiness.body(), status_code=200 if readiness.ready else 503)
