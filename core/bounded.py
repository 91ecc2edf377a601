"""Blocking work on threads of its own, bounded: at most ``workers`` calls run at once and
``waiting`` more wait for a thread; a call beyond that is refused at once (``PoolFull``) instead
of queueing without end. For work that must never run on the event loop and must not crowd the
default executor the database calls share: Argon2id password hashes (64 MiB each), the audit
chain's check (``services.passwords``, ``services.audit``).

A call's place is held until its work ends, not until its caller stops waiting: a caller that
gives up (a client that went away) cancels work that has not started, and work that has started
keeps its place until it finishes, so the bound holds for what really runs."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from typing import ParamSpec, TypeVar

P = ParamSpec("P")
T = TypeVar("T")


class PoolFull(Exception):
    """Every thread is busy and ``waiting`` calls wait already: try again later."""


class BoundedPool:
    def __init__(self, name: str, workers: int, waiting: int) -> None:
        self.name, self.workers, self.waiting = name, workers, waiting
        self._executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=name)
        self._places = threading.BoundedSemaphore(workers + waiting)

    async def run(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> T:
        """``fn(*args, **kwargs)`` on one of the pool's threads; ``PoolFull`` when no place is free."""
        if not self._places.acquire(blocking=False):
            raise PoolFull(f"{self.name}: {self.workers} running and {self.waiting} waiting")
        try:
            future: Future[T] = self._executor.submit(partial(fn, *args, **kwargs))
        except BaseException:
            self._places.release()
            raise
        future.add_done_callback(lambda _: self._places.release())
        return await asyncio.wrap_future(future)
