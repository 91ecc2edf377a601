"""The load generator of bench/verify.py: pre-built HTTP/1.1 requests over raw asyncio streams.

It runs in its own process (``python -m bench.verify_load JOB OUTCOME``, pickles in and out) so
that neither the orchestrator's event loop (child-log pipes, the Temporal client) nor its imports
share a loop with the measured traffic, and so its CPU is its own to report. Each of
``concurrency`` keep-alive connections sends the next request of the list as soon as its previous
answer is read (closed loop), or, with ``rate``, when that request is due (open loop: request i
is due at ``i / rate`` seconds, and its latency counts from when it was due, so a stalled server
cannot hide queueing by slowing the client down). A request is bytes built beforehand, signature
included; a response is read by its Content-Length and kept as bytes, parsed only afterwards.
Only the standard library (and uvloop when present) is imported here.
"""

from __future__ import annotations

import asyncio
import pickle
import sys
import time
from dataclasses import dataclass, field

HEAD_END = b"\r\n\r\n"


@dataclass
class Job:
    host: str
    port: int
    concurrency: int
    requests: list[bytes]
    seconds: float | None = None  # no new request after this long; None: send them all
    rate: float | None = None  # open loop: requests per second; None: closed loop
    keep_bodies: bool = False


@dataclass
class Outcome:
    sent: int = 0
    latencies: list[float] = field(default_factory=list)  # seconds, in completion order
    statuses: dict[int, int] = field(default_factory=dict)  # request index -> HTTP status
    bodies: dict[int, bytes] = field(default_factory=dict)  # request index -> body (keep_bodies)
    failures: list[str] = field(default_factory=list)  # transport errors, at most a few
    transport_errors: int = 0
    seconds: float = 0.0  # first request sent to last answer read
    cpu_seconds: float = 0.0  # this process, over the same span


class ProtocolError(Exception):
    pass


async def read_response(reader: asyncio.StreamReader) -> tuple[int, bytes, bool]:
    """Status, body and whether the server closes the connection after it."""
    head = await reader.readuntil(HEAD_END)
    if not head.startswith(b"HTTP/1.1 "):
        raise ProtocolError(f"not an HTTP/1.1 response: {head[:40]!r}")
    status = int(head[9:12])
    lower = head.lower()
    at = lower.find(b"\r\ncontent-length:")
    if at < 0:
        raise ProtocolError("response without Content-Length")
    length = int(lower[at + 17 : lower.index(b"\r\n", at + 2)])
    body = await reader.readexactly(length) if length else b""
    return status, body, b"\r\nconnection: close\r\n" in lower


class Runner:
    def __init__(self, job: Job) -> None:
        self.job, self.out = job, Outcome()
        self.next = 0
        self.stop_at = float("inf")
        self.began = 0.0

    async def connect(self) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        return await asyncio.open_connection(self.job.host, self.job.port)

    async def client(self, conn: tuple[asyncio.StreamReader, asyncio.StreamWriter]) -> None:
        job, out = self.job, self.out
        reader, writer = conn
        clock = time.perf_counter
        try:
            while self.next < len(job.requests):
                i = self.next
                self.next += 1
                if job.rate is None:
                    if clock() >= self.stop_at:
                        return
                    began = clock()
                else:
                    due = self.began + i / job.rate
                    if due >= self.stop_at:
                        return
                    if due > clock():
                        await asyncio.sleep(due - clock())
                    began = min(due, clock())  # late: from when it was due; early wake-up: now
                out.sent += 1
                try:
                    writer.write(job.requests[i])
                    status, body, closing = await read_response(reader)
                except (OSError, asyncio.IncompleteReadError, ProtocolError, ValueError) as exc:
                    out.transport_errors += 1
                    if len(out.failures) < 5:
                        out.failures.append(f"request {i}: {exc!r}")
                    writer.close()
                    reader, writer = await self.connect()
                    continue
                out.latencies.append(clock() - began)
                out.statuses[i] = status
                if job.keep_bodies:
                    out.bodies[i] = body
                if closing:
                    writer.close()
                    reader, writer = await self.connect()
        finally:
            writer.close()

    async def run(self) -> Outcome:
        conns = [await self.connect() for _ in range(self.job.concurrency)]  # before the clock
        cpu = time.process_time()
        self.began = time.perf_counter()
        if self.job.seconds is not None:
            self.stop_at = self.began + self.job.seconds
        await asyncio.gather(*(self.client(c) for c in conns))
        self.out.seconds = time.perf_counter() - self.began
        self.out.cpu_seconds = time.process_time() - cpu
        return self.out


def run(job: Job) -> Outcome:
    try:
        import uvloop
    except ImportError:  # pragma: no cover - uvicorn[standard] installs it
        return asyncio.run(Runner(job).run())
    return uvloop.run(Runner(job).run())


def main() -> None:
    job_path, outcome_path = sys.argv[1:3]
    with open(job_path, "rb") as f:
        job = pickle.load(f)  # noqa: S301 - written by bench/verify.py a moment ago
    outcome = run(job)
    with open(outcome_path, "wb") as f:
        pickle.dump(outcome, f, protocol=pickle.HIGHEST_PROTOCOL)


if __name__ == "__main__":
    # through the imported module, so the pickled Outcome names bench.verify_load, not __main__
    from bench.verify_load import main as imported_main

    imported_main()
