"""Readiness: whether the dependencies of this process answer now (the API's and the worker's
``/readyz``).

Each check is bounded by ``CHECK_TIMEOUT`` and the checks of one call run at once. Nothing is
cached that could hide a recovery: every call asks the database and Temporal anew (only the head of
the migrations is read once, since it is the installed code's, not the database's). A failing check
is named with a short reason: the exception's class and the first line of its message, at most
``REASON_LIMIT`` characters, with the user info of URLs, ``password=...`` values and the secrets
the caller names removed; never a stack trace.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import timedelta
from functools import cache, partial
from typing import TypeVar
from urllib.parse import quote

from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

from core.text import one_line
from store.db import MIGRATIONS_DIR

T = TypeVar("T")
OK = "ok"
CHECK_TIMEOUT = 2.0  # seconds
REASON_LIMIT = 120
# blocking checks run at once, each on a daemon thread of its own, so a dependency that hangs holds
# neither a shared executor nor the process's exit; further checks wait for a free one (within
# their timeout: a hung database answers "no answer within 2 s", and starts no more threads)
MAX_WAITING = 4
_waiting = threading.BoundedSemaphore(MAX_WAITING)
URL_USER_INFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)\S*@")
SECRET_VALUE = re.compile(r"""(?i)\b(password|passwd|pwd|secret|token)(\s*[=:]\s*)("[^"]*"|'[^']*'|\S+)""")
Probe = Callable[[], Awaitable[object]]


class NotReady(Exception):
    """A dependency answered, but not as it should: the message is the reason shown."""


@dataclass(frozen=True)
class Readiness:
    """Each check by name: ``"ok"`` or why not."""

    checks: dict[str, str]

    @property
    def ready(self) -> bool:
        return all(outcome == OK for outcome in self.checks.values())

    def body(self) -> dict[str, object]:
        return {"status": "ready" if self.ready else "not ready", "checks": self.checks}


def short_reason(exc: BaseException, secrets: Iterable[str] = ()) -> str:
    """``Class: first line of the message``, cut to REASON_LIMIT, without credentials. A database
    error speaks through the driver's exception (SQLAlchemy's own text adds the SQL and a link)."""
    orig = getattr(exc, "orig", None)
    cause = orig if isinstance(orig, BaseException) else exc
    text = str(cause)
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***").replace(quote(secret, safe=""), "***")
    text = SECRET_VALUE.sub(r"\1\2***", URL_USER_INFO.sub(r"\1***@", text))
    line = next((part.strip() for part in text.splitlines() if part.strip()), "")
    return one_line(f"{type(cause).__name__}: {line}" if line else type(cause).__name__, REASON_LIMIT)


async def check_all(
    probes: Mapping[str, Probe], within: float = CHECK_TIMEOUT, secrets: Iterable[str] = ()
) -> Readiness:
    """Run every probe at once, each given ``within`` seconds."""
    hidden = [s for s in secrets if s]
    outcomes = await asyncio.gather(*(_outcome(probe, within, hidden) for probe in probes.values()))
    return Readiness(dict(zip(probes, outcomes, strict=True)))


async def _outcome(probe: Probe, within: float, secrets: list[str]) -> str:
    try:
        await asyncio.wait_for(probe(), within)
    except NotReady as exc:
        return one_line(str(exc), REASON_LIMIT)
    except TimeoutError:
        return f"unreachable: no answer within {within:g} s"
    except Exception as exc:
        return f"unreachable: {short_reason(exc, secrets)}"
    return OK


async def in_own_thread(fn: Callable[[], T]) -> T:
    """``fn()`` on a daemon thread of its own, once one of the MAX_WAITING slots is free; a caller
    that stops waiting (its timeout) leaves the thread to finish by itself."""
    # threads free the slots, so no event of one loop fits; this polls only while MAX_WAITING run
    while not _waiting.acquire(blocking=False):  # noqa: ASYNC110 - see above
        await asyncio.sleep(0.005)
    loop = asyncio.get_running_loop()
    answer: asyncio.Future[T] = loop.create_future()

    def settle(outcome: Callable[[], object]) -> None:
        if not answer.done():  # done: the caller timed out and went away
            outcome()

    def run() -> None:
        outcome: Callable[[], object]
        try:
            outcome = partial(answer.set_result, fn())
        except Exception as exc:
            outcome = partial(answer.set_exception, exc)
        finally:
            _waiting.release()
        with contextlib.suppress(RuntimeError):  # the loop is closed: nobody waits any more
            loop.call_soon_threadsafe(settle, outcome)

    try:
        threading.Thread(target=run, name="mandatum-readiness", daemon=True).start()
    except BaseException:  # no thread could start: give the slot back
        _waiting.release()
        raise
    return await answer


# --- the probes ----------------------------------------------------------------------------------


async def database_answers(engine: Engine) -> None:
    """The database answers ``SELECT 1``."""

    def select_one() -> None:
        with engine.connect() as conn:
            conn.exec_driver_sql("SELECT 1").scalar()

    await in_own_thread(select_one)


@cache
def migration_heads() -> frozenset[str]:
    """The newest revision(s) of the installed migrations (store/migrations)."""
    return frozenset(ScriptDirectory(str(MIGRATIONS_DIR)).get_heads())


async def migrations_current(engine: Engine) -> None:
    """The database's Alembic revision is the head of the installed migrations."""

    def revisions() -> tuple[frozenset[str], frozenset[str]]:
        with engine.connect() as conn:
            return frozenset(MigrationContext.configure(conn).get_current_heads()), migration_heads()

    found, expected = await in_own_thread(revisions)
    if found != expected:
        at = ", ".join(sorted(found)) or "none"
        raise NotReady(
            f"not current: the database is at revision {at}, the code at {', '.join(sorted(expected))}"
        )


async def temporal_serving(client: Client | None) -> None:
    """Temporal's frontend answers its gRPC health check (it connects a lazy client first). A call
    the server gave up on ("operation was canceled", seen from a loaded dev server) is asked once
    more within the probe's time, so one dropped call does not mark the process unready."""
    if client is None:
        raise NotReady("not connected: this process has no Temporal client (yet)")
    for attempt in (1, 2):
        try:
            serving = await client.service_client.check_health(timeout=timedelta(seconds=CHECK_TIMEOUT))
            break
        except RPCError as exc:
            if exc.status != RPCStatusCode.CANCELLED or attempt == 2:
                raise
    if not serving:
        raise NotReady("not serving: the frontend's health check says it is not")
