"""When each API key last signed an accepted call, to the minute, without a write on the call's path.

Each API process keeps, per key, the minute it last wrote (or read with the key). A call in a later
minute marks the key pending; pending keys are written together a moment later (``FLUSH_SECONDS``)
on a thread, by one UPDATE per key that only ever moves ``last_used_at`` forward
(``services.access.record_key_use``), so API processes writing the same key agree. A key is written at
most once a minute per process, whatever its traffic; the call that marked it never waits for the
write, and a failed write is logged and dropped (the key is written again on its next use). The
lifespan writes what is pending when the process stops.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial

from services.context import utcnow

log = logging.getLogger("mandatum.api.key_use")

FLUSH_SECONDS = 2.0  # how long a marked key waits, so keys used in the same moments share a write
MAX_KNOWN = 100_000  # keys remembered per process; beyond that the memory starts afresh

Write = Callable[[Mapping[str, datetime]], None]


def minute_of(moment: datetime) -> datetime:
    return moment.replace(second=0, microsecond=0)


class KeyUse:
    """The per-process record of key use: ``used`` on each accepted call, ``flush`` at shutdown."""

    def __init__(
        self, write: Write, *, delay: float = FLUSH_SECONDS, clock: Callable[[], datetime] = utcnow
    ) -> None:
        self.clock = clock
        self._write = write
        self.delay = delay
        self._known: dict[str, datetime] = {}  # key id -> the newest minute written or read
        self._pending: dict[str, datetime] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._timer_loop: asyncio.AbstractEventLoop | None = None
        self._writing: set[asyncio.Future[None]] = set()

    def used(self, key_id: str, stored: datetime | None = None) -> None:
        """The key signed an accepted call now; ``stored`` is its ``last_used_at`` as last read.
        Marks it for writing when this minute is later than any known for it."""
        minute = minute_of(self.clock())
        known = self._known.get(key_id, stored)
        if known is not None and known >= minute:
            return
        if len(self._known) >= MAX_KNOWN:
            self._known.clear()
        self._known[key_id] = self._pending[key_id] = minute
        loop = asyncio.get_running_loop()
        if self._timer is None or self._timer_loop is not loop:
            self._timer, self._timer_loop = loop.call_later(self.delay, self._start_write), loop

    def _start_write(self) -> None:
        self._timer = None
        if not self._pending:
            return
        batch, self._pending = self._pending, {}
        write = asyncio.ensure_future(asyncio.to_thread(self._write, batch))
        self._writing.add(write)
        write.add_done_callback(partial(self._written, batch))

    def _written(self, batch: dict[str, datetime], write: asyncio.Future[None]) -> None:
        self._writing.discard(write)
        failure = None if write.cancelled() else write.exception()
        if failure is None and not write.cancelled():
            return
        log.warning("last use of %d API key(s) not recorded: %r", len(batch), failure or "cancelled")
        for key_id, minute in batch.items():  # written again on the next use
            if self._known.get(key_id) == minute:
                del self._known[key_id]

    async def flush(self) -> None:
        """Write what is pending now, and wait for every write under way (its failure is logged)."""
        if self._timer is not None:
            self._timer.cancel()
        self._start_write()
        loop = asyncio.get_running_loop()
        ours = [w for w in self._writing if w.get_loop() is loop]
        await asyncio.gather(*ours, return_exceptions=True)
