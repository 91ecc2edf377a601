"""Group commit: concurrent callers of one blocking batch function share a single call.

Each caller still waits until the batch holding its item has been written, so "done when the
call returns" holds; under load, N concurrent writes become one transaction. The write belongs
to no caller, so a caller being cancelled never strands the others.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Generic, TypeVar

T = TypeVar("T")


class _Batch(Generic[T]):
    def __init__(self) -> None:
        self.items: list[T] = []
        self.done: asyncio.Future[None] = asyncio.get_running_loop().create_future()


class GroupCommit(Generic[T]):
    """One write at a time: what is submitted while a batch is being written waits, and is written
    together as the next batch once that one is done (on PostgreSQL, verifications of one
    organization serialize on its chain's head anyway, so each write holds the head for a whole
    batch instead of one verification).

    ``inline``: the batch is written on the event loop itself instead of a worker thread, for a
    write that costs less than the thread hop (SQLite: see ``store.db.run_db``)."""

    def __init__(self, write_batch: Callable[[list[T]], None], *, inline: bool = False) -> None:
        self._write_batch = write_batch
        self._inline = inline
        self._open: _Batch[T] | None = None
        self._writing: asyncio.Future[None] | None = None
        self._executor: ThreadPoolExecutor | None = None

    def _thread(self) -> ThreadPoolExecutor:
        """The writes' own thread: queued behind the loop's shared threads (``asyncio.to_thread``,
        busy with the work that submits to this batch), a write would hold up every caller of its
        batch."""
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-commit")
        return self._executor

    async def submit(self, item: T) -> None:
        """Returns once ``item`` has been written; raises what the write raised."""
        batch = self._open
        if batch is None:
            batch = self._open = _Batch()
            if self._writing is None:  # otherwise the write in flight flushes it when it ends
                # flushed after the callbacks already queued in this loop turn: they join this batch
                asyncio.get_running_loop().call_soon(self._flush)
        batch.items.append(item)
        await asyncio.shield(batch.done)

    def _flush(self) -> None:
        batch, self._open = self._open, None
        if batch is None:
            return
        if self._inline:
            try:
                self._write_batch(batch.items)
            except Exception as exc:  # every caller of the batch gets it
                batch.done.set_exception(exc)
            else:
                batch.done.set_result(None)
            return
        loop = asyncio.get_running_loop()
        write = self._writing = loop.run_in_executor(self._thread(), self._write_batch, batch.items)

        def finish(task: asyncio.Future[None]) -> None:
            self._writing = None
            if task.cancelled():
                batch.done.cancel()
            elif (exc := task.exception()) is not None:
                batch.done.set_exception(exc)
            else:
                batch.done.set_result(None)
            if self._open is not None:  # submitted while this batch was written
                asyncio.get_running_loop().call_soon(self._flush)

        write.add_done_callback(finish)
