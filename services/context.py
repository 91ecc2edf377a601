"""The explicit dependencies of every service function, made once per process.

The API makes one in its lifespan, the ``mandatum`` command one per invocation (``temporal`` left
``None`` until a command needs it), the worker one for its activities, tests their own
(``services.setup.open_context`` opens the API's). A service function takes the context, the actor
and its arguments; nothing reaches for globals. ``run_blocking`` calls a synchronous one from async
code the way the context's database wants it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

from sqlalchemy import Engine

from core.group_commit import GroupCommit
from core.otp import JourneySecrets
from core.secretbox import SecretCipher
from core.settings import Settings
from services.rule_pool import RulePool
from store import requests as store_requests
from store import verifications as store_verifications
from store.db import is_sqlite, run_db
from store.db import utcnow as utcnow  # the services' clock (aware UTC), for the surfaces too
from store.prepared import LoopReads
from store.verifications import Pending

if TYPE_CHECKING:  # the client is loaded by the processes that connect, not by every command
    from temporalio.client import Client

P = ParamSpec("P")
T = TypeVar("T")


@dataclass
class Context:
    settings: Settings
    engine: Engine
    cipher: SecretCipher
    temporal: Client | None = None
    # "workflow started" marks of concurrent creations, written together (core.group_commit)
    started_marks: GroupCommit[str] = field(init=False)
    # the writes of concurrent verifications (services.verification), one transaction per batch
    # (store.verifications.record_batch): on SQLite written on the event loop (SQLite runs write
    # transactions one at a time), on PostgreSQL on a thread
    verifications: GroupCommit[Pending] = field(init=False)
    # the keyed operations of the subject's journey (codes, links, page sessions)
    journey: JourneySecrets = field(init=False)
    # PostgreSQL: one-statement reads on the event loop (the verification's first read)
    loop_reads: LoopReads | None = field(init=False)
    # the evaluation processes of costly rules, started on first use (services.rule_pool)
    rules: RulePool = field(init=False)
    # work started after an answer and not awaited by it (an event after a verification's commit)
    tasks: set[asyncio.Task[None]] = field(init=False, default_factory=set)

    def client(self) -> Client:
        """The Temporal client, for the operations that need the workflows."""
        if self.temporal is None:
            raise RuntimeError("Temporal client not connected")
        return self.temporal

    def spawn(self, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` on the event loop without waiting for it (held here until it ends)."""
        task = asyncio.get_running_loop().create_task(work)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)

    def __post_init__(self) -> None:
        self.started_marks = GroupCommit(partial(store_requests.mark_workflows_started, self.engine))
        sqlite = is_sqlite(self.engine)
        self.verifications = GroupCommit(
            partial(store_verifications.record_batch, self.engine), inline=sqlite
        )
        self.journey = JourneySecrets(self.settings.master_key_bytes())
        self.loop_reads = None if sqlite else LoopReads(self.engine)
        self.rules = RulePool(
            processes=self.settings.rule_processes,
            waiting_per_org=self.settings.rule_waiting_per_organization,
        )


async def run_blocking(ctx: Context, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
    """A blocking service call (or a page built from several) from async code, the way the context's
    database wants it (``store.db.run_db``): on the event loop with SQLite, on a thread with
    PostgreSQL. How the API and the dashboard call the services' synchronous functions."""
    return await run_db(ctx.engine, fn, *args, **kwargs)
