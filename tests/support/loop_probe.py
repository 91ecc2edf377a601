"""What runs where: a probe that ticks on the event loop, and a wrapper that records, for each call
of a blocking function, the thread it ran on and whether the loop kept ticking while it ran.

The wrapped call waits (at most ``LIMIT`` seconds) until the probe has ticked ``TICKS`` times since
the call began. On a thread of its own that happens at once, since the loop is free; on the loop's
own thread the probe cannot tick, the wait runs out, and the call is recorded as having held the
loop. The limit only bounds a failing test: a passing one never waits for it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

TICKS = 3
LIMIT = 10.0


@dataclass(frozen=True)
class Call:
    thread: int
    loop_ticked: bool  # the probe ticked TICKS times while this call ran


@dataclass
class LoopProbe:
    loop_thread: int
    ticks: int = 0
    calls: list[Call] = field(default_factory=list)

    def wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        def wrapped(*args: Any, **kwargs: Any) -> Any:
            start, deadline = self.ticks, time.monotonic() + (0 if self.held else LIMIT)
            while self.ticks < start + TICKS and time.monotonic() < deadline:
                time.sleep(0.001)
            self.calls.append(Call(threading.get_ident(), self.ticks >= start + TICKS))
            return fn(*args, **kwargs)

        return wrapped

    @property
    def held(self) -> bool:
        """A call held the loop already (later calls do not wait again: the test fails anyway)."""
        return any(not c.loop_ticked for c in self.calls)

    def off_the_loop(self) -> bool:
        """Every call ran on another thread than the loop's, and the loop ticked meanwhile."""
        return bool(self.calls) and all(c.thread != self.loop_thread and c.loop_ticked for c in self.calls)


@asynccontextmanager
async def loop_probe() -> AsyncIterator[LoopProbe]:
    """A probe ticking on the running loop (every millisecond) until the block ends."""
    probe = LoopProbe(threading.get_ident())

    async def tick() -> None:
        while True:
            await asyncio.sleep(0.001)
            probe.ticks += 1

    ticking = asyncio.create_task(tick())
    try:
        yield probe
    finally:
        ticking.cancel()
