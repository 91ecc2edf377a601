"""The worker's health endpoint, on ``MANDATUM_WORKER_HEALTH_HOST``:``MANDATUM_WORKER_HEALTH_PORT``
(none when the port is unset).

- ``/healthz``: 200 ``{"status": "ok"}`` while the process answers (liveness).
- ``/readyz``: 200 ``{"status": "ready", "checks": {"worker": "ok", "temporal": "ok"}}`` while the
  worker polls its task queue and Temporal's frontend answers its health check; else 503 naming
  what fails (``orchestration.health``: each check within 2 s, anew on every call).

A small HTTP/1.1 server on ``asyncio.start_server``: the worker loads no web framework. GET and HEAD
only, one request per connection, JSON bodies; a client gets ``REQUEST_SECONDS`` to send its request.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import dataclass, field
from functools import partial
from http import HTTPStatus

from temporalio.client import Client
from temporalio.worker import Worker

from orchestration.health import NotReady, Readiness, check_all, temporal_serving

log = logging.getLogger("mandatum.worker")
REQUEST_SECONDS = 5.0
MAX_LINE = 8192  # bytes of the request line or a header line
MAX_HEADERS = 100


@dataclass
class WorkerHealth:
    """What the worker's readiness looks at; ``worker.main`` fills it in as it starts."""

    stop: asyncio.Event = field(default_factory=asyncio.Event)
    client: Client | None = None
    worker: Worker | None = None

    async def readiness(self) -> Readiness:
        return await check_all({"worker": self._polling, "temporal": partial(temporal_serving, self.client)})

    async def _polling(self) -> None:
        if self.stop.is_set():
            raise NotReady("stopping")
        if self.worker is None:
            raise NotReady("not polling: connecting to Temporal")
        if not self.worker.is_running:
            raise NotReady("not polling: " + ("stopped" if self.worker.is_shutdown else "starting"))


@dataclass
class HealthServer:
    health: WorkerHealth
    _server: asyncio.Server | None = None

    async def start(self, host: str, port: int) -> None:
        """Listen (port 0: any free port, see ``port``); an address in use raises OSError."""
        self._server = await asyncio.start_server(self._serve, host, port, limit=MAX_LINE)

    @property
    def port(self) -> int:
        assert self._server is not None, "not started"
        return int(self._server.sockets[0].getsockname()[1])

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            try:
                method, path = await asyncio.wait_for(_read_request(reader), REQUEST_SECONDS)
            except (ValueError, TimeoutError):  # malformed, a line over MAX_LINE, or too slow
                method, path = "", ""
            status, body, extra = await self._answer(method, path)
            payload = json.dumps(body).encode()
            head = [
                f"HTTP/1.1 {status.value} {status.phrase}",
                "Content-Type: application/json",
                f"Content-Length: {len(payload)}",
                "Cache-Control: no-store",
                "X-Content-Type-Options: nosniff",
                "Connection: close",
                *extra,
            ]
            writer.write(("\r\n".join(head) + "\r\n\r\n").encode() + (b"" if method == "HEAD" else payload))
            await writer.drain()
        except ConnectionError:
            pass  # the client went away
        finally:
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, method: str, path: str) -> tuple[HTTPStatus, dict[str, object], list[str]]:
        if not method:
            return HTTPStatus.BAD_REQUEST, {"status": "bad request"}, []
        if path not in ("/healthz", "/readyz"):
            return HTTPStatus.NOT_FOUND, {"status": "not found"}, []
        if method not in ("GET", "HEAD"):
            return HTTPStatus.METHOD_NOT_ALLOWED, {"status": "method not allowed"}, ["Allow: GET, HEAD"]
        if path == "/healthz":
            return HTTPStatus.OK, {"status": "ok"}, []
        readiness = await self.health.readiness()
        status = HTTPStatus.OK if readiness.ready else HTTPStatus.SERVICE_UNAVAILABLE
        return status, readiness.body(), []


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str]:
    """The method and path of a request, its headers read and ignored; ValueError when malformed."""
    parts = (await reader.readline()).decode("latin-1").split()
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise ValueError("not an HTTP request line")
    for _ in range(MAX_HEADERS):
        if not (await reader.readline()).strip():  # the blank line, or the end
            return parts[0], parts[1].split("?", 1)[0]
    raise ValueError("too many header lines")


async def serve_health(health: WorkerHealth, host: str, port: int | None) -> HealthServer | None:
    """The endpoint, listening; None when no port is configured."""
    if port is None:
        return None
    server = HealthServer(health)
    await server.start(host, port)
    log.info("worker health on http://%s:%d (/healthz, /readyz)", host, server.port)
    return server
