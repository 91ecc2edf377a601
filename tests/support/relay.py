"""TCP relays for the tests' hosts (``tests.support.netns``): a listening address whose every
connection is joined, byte for byte, to a connection to a target address.

A ``Relay`` runs on a thread and event loop of its own (so that the test's own loop, busy or
blocked in a synchronous database call, never holds up a byte) and, given a namespace, inside
it: its thread enters the namespace before making any socket, so that it listens and connects
there. Relays are how a service that listens on 127.0.0.1 only (PostgreSQL, the tests' Temporal
server, a webhook receiver) is reached over a host's link, and how a host reaches a service of the
root namespace on its own 127.0.0.1 (the address a webhook URL may name outside production).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from functools import partial

from tests.support.netns import enter

Address = tuple[str, int]
CHUNK = 65536


async def _copy(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    """Until ``source`` ends, then pass the end on (the other direction goes on)."""
    while data := await source.read(CHUNK):
        sink.write(data)
        await sink.drain()
    if sink.can_write_eof():
        sink.write_eof()


class Relay:
    """Relays on a thread of their own; ``netns``: in that namespace."""

    def __init__(self, netns: str | None = None) -> None:
        self.netns = netns
        self.loop = asyncio.new_event_loop()
        self.servers: list[asyncio.Server] = []
        self.joins: set[asyncio.Task[None]] = set()
        self._started = threading.Event()
        self._failed: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"relay-{netns or 'root'}", daemon=True)

    def start(self) -> Relay:
        self._thread.start()
        self._started.wait(10)
        if self._failed is not None:
            raise self._failed
        return self

    def _run(self) -> None:
        try:
            if self.netns is not None:
                enter(self.netns)
        except BaseException as exc:
            self._failed = exc
            self._started.set()
            return
        asyncio.set_event_loop(self.loop)
        self._started.set()
        try:
            self.loop.run_forever()
        finally:
            self.loop.close()

    def forward(self, listen: Address, target: Address) -> int:
        """Listen on ``listen`` (port 0: any free one) and join each connection to ``target``; the
        port listened on."""
        return asyncio.run_coroutine_threadsafe(self._listen(listen, target), self.loop).result(10)

    async def _listen(self, listen: Address, target: Address) -> int:
        server = await asyncio.start_server(partial(self._join, target), *listen)
        self.servers.append(server)
        return int(server.sockets[0].getsockname()[1])

    async def _join(
        self, target: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.joins.add(task)
        try:
            await self._both_ways(target, reader, writer)
        except asyncio.CancelledError:  # stopping: the connection is dropped (and the task ends
            writer.transport.abort()  # without an error, which asyncio's stream server would log)
        finally:
            self.joins.discard(task)

    async def _both_ways(
        self, target: Address, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        try:
            far_reader, far_writer = await asyncio.open_connection(*target)
        except OSError:  # the target is not there (or unreachable): the client sees its connection end
            writer.transport.abort()
            return
        ended = False  # both ways to their end: what is written still goes out as each side closes
        try:
            # a broken side (a reset) stops both, so that neither waits for the other
            async with asyncio.TaskGroup() as both:
                both.create_task(_copy(reader, far_writer))
                both.create_task(_copy(far_reader, writer))
            ended = True
        except* OSError:
            pass
        finally:
            for side in (writer, far_writer):
                if ended:
                    side.close()
                else:
                    side.transport.abort()

    def stop(self) -> None:
        """Stop listening, drop every connection, end the thread."""
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)

    async def _close(self) -> None:
        for server in self.servers:
            server.close()
        for join in list(self.joins):
            join.cancel()
        await asyncio.gather(*self.joins, return_exceptions=True)
