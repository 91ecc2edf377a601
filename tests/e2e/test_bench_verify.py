"""The verify benchmark's own parts: the raw HTTP load generator, the signer, the answer reading.

The load generator runs here in a thread (its own event loop) against small servers in the test's
loop, and once against the real app under uvicorn, so a change in either side's framing shows."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest_asyncio
import uvicorn

from api.app import create_app
from api.signing import signature_matches
from bench import verify_load as load
from bench import verify_setup as setup
from core.settings import Settings
from tests.support.api_client import Credentials
from tests.support.ports import free_port
from wire import versioning

OK_BODY = b'{"decision":"allow"}'


def response(body: bytes, status: str = "200 OK", extra: bytes = b"") -> bytes:
    return b"HTTP/1.1 %s\r\ncontent-length: %d\r\n%s\r\n" % (status.encode(), len(body), extra) + body


Answer = Callable[[bytes], bytes | None]  # request head -> response bytes, or None to hang up
Starter = Callable[[Answer], Awaitable[int]]


@pytest_asyncio.fixture
async def server() -> AsyncIterator[Starter]:
    """Starts a tiny HTTP/1.1 server answering each request head with ``answer``; yields its port."""
    servers: list[asyncio.Server] = []

    async def start(answer: Answer) -> int:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            try:
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    length = next(
                        (
                            int(line.split(b":")[1])
                            for line in head.lower().split(b"\r\n")
                            if line.startswith(b"content-length:")
                        ),
                        0,
                    )
                    await reader.readexactly(length)
                    reply = answer(head)
                    if reply is None:
                        break
                    writer.write(reply)
                    if b"connection: close" in reply:
                        break
            except asyncio.IncompleteReadError:
                pass
            writer.close()

        srv = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(srv)
        return int(srv.sockets[0].getsockname()[1])

    yield start
    for srv in servers:
        srv.close()


async def run(job: load.Job) -> load.Outcome:
    return await asyncio.to_thread(load.run, job)


async def test_closed_loop_sends_every_request_and_keeps_answers(server: Starter) -> None:
    port = await server(lambda head: response(head.split(b" ")[1]))
    requests = [f"GET /{i} HTTP/1.1\r\nHost: x\r\n\r\n".encode() for i in range(200)]
    out = await run(load.Job("127.0.0.1", port, 8, requests, keep_bodies=True))
    assert out.sent == 200 and len(out.latencies) == 200 and out.transport_errors == 0
    assert out.statuses == dict.fromkeys(range(200), 200)
    assert out.bodies == {i: f"/{i}".encode() for i in range(200)}
    assert out.seconds > 0 and out.cpu_seconds >= 0


async def test_a_time_bound_stops_sending(server: Starter) -> None:
    port = await server(lambda head: response(OK_BODY))
    requests = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"] * 1_000_000
    out = await run(load.Job("127.0.0.1", port, 4, requests, seconds=0.3))
    assert 0 < out.sent < len(requests) and out.seconds >= 0.3
    assert set(out.statuses.values()) == {200} and out.bodies == {}


async def test_open_loop_paces_requests(server: Starter) -> None:
    port = await server(lambda head: response(OK_BODY))
    requests = [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"] * 50
    out = await run(load.Job("127.0.0.1", port, 4, requests, rate=250))
    assert out.sent == 50 and out.seconds >= 0.9 * 49 / 250  # timers may wake a little early
    assert min(out.latencies) > 0


async def test_reconnects_on_close_and_counts_transport_errors(server: Starter) -> None:
    seen = 0

    def answer(head: bytes) -> bytes | None:
        nonlocal seen
        seen += 1
        if seen % 5 == 0:
            return None  # hang up without an answer
        return response(OK_BODY, extra=b"connection: close\r\n" if seen % 2 else b"")

    port = await server(answer)
    out = await run(load.Job("127.0.0.1", port, 2, [b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"] * 40))
    assert out.sent == 40 and out.transport_errors == 8 and len(out.statuses) == 32
    assert out.failures and len(out.failures) <= 5


def _caller(org: Credentials) -> setup.Caller:
    return setup.Caller(org.organization_id, org.did, org.api_key, org.secret)


def test_signer_signs_each_request_distinctly(org: Credentials) -> None:
    signer = setup.Signer(_caller(org), "127.0.0.1:1")
    vp = {"id": "urn:via:presentation:x", "type": ["VerifiablePresentation"]}
    built = [*signer.me(3), *signer.presentations(["urn:via:credential:a"], 2), *signer.verifications([vp])]
    stamps, signatures = [], set()
    for raw in built:
        head, _, body = raw.partition(b"\r\n\r\n")
        headers = dict(line.split(": ", 1) for line in head.decode().split("\r\n")[1:])
        assert signature_matches((org.secret,), headers["X-Timestamp"], body, headers["X-Signature"])
        assert int(headers.get("Content-Length", "0")) == len(body)
        stamps.append(int(headers["X-Timestamp"]))
        signatures.add(headers["X-Signature"])
    assert stamps == sorted(set(stamps)) and len(signatures) == len(built)
    assert built[3].startswith(b"POST /credential/urn%3Avia%3Acredential%3Aa/presentation HTTP/1.1\r\n")
    assert built[3].endswith(setup.compact({"targetVerifier": org.did}))
    assert json.loads(built[5].partition(b"\r\n\r\n")[2]) == {
        "presentation": vp,
        "executionParams": setup.EXECUTION_PARAMS,
    }


def test_answers_are_read_after_the_run() -> None:
    allow = json.dumps({"decision": "allow"}).encode()
    deny = json.dumps({"statusCode": 403, "decision": "deny", "reason": "vp_already_used"}).encode()
    seen = setup.verdicts({0: 200, 1: 403, 2: 200, 3: 500}, {0: allow, 1: deny, 2: allow, 3: b"oops"})
    assert seen == {"allow": 2, "403 vp_already_used": 1, "500 b'oops'": 1}
    vp = {"id": "urn:via:presentation:1"}
    found, problems = setup.presentations_of(
        {0: 200, 1: 404},
        {
            0: json.dumps({"data": {"presentation": vp}}).encode(),
            1: json.dumps({"statusCode": 404, "message": "no such mandate"}).encode(),
        },
    )
    assert found == [vp] and problems == {"404 no such mandate": 1}


async def test_load_generator_against_the_real_app(settings: Settings, org: Credentials) -> None:
    """Signed GET /me as the benchmark sends it, through uvicorn and the signature middleware."""
    port = free_port()
    config = uvicorn.Config(
        create_app(settings),
        host="127.0.0.1",
        port=port,
        lifespan="off",
        log_level="warning",
        access_log=False,
    )
    uv = uvicorn.Server(config)
    serving = asyncio.create_task(uv.serve())
    while not uv.started:  # noqa: ASYNC110 - uvicorn offers no event to wait on
        await asyncio.sleep(0.02)
    try:
        signer = setup.Signer(_caller(org), f"127.0.0.1:{port}")
        out = await run(load.Job("127.0.0.1", port, 4, signer.me(40), keep_bodies=True))
    finally:
        uv.should_exit = True
        await serving
    assert out.transport_errors == 0 and set(out.statuses.values()) == {200}
    assert {json.loads(b)["organizationId"] for b in out.bodies.values()} == {org.organization_id}
    assert json.loads(out.bodies[0])["apiVersion"] == versioning.newest()


def test_the_benchmark_organization_is_made_with_its_vp_lifetime(settings: Settings) -> None:
    """``create_organization`` as ``python -m bench.verify`` runs it (the lifetime change is an audit
    record, so its engine needs the service's signer): the organization, its key and the lifetime."""
    from sqlmodel import col, select

    from store.db import make_engine
    from store.tables import Organization

    caller = setup.create_organization(settings)
    engine = make_engine(settings.sqlalchemy_url)
    try:
        with engine.connect() as conn:
            minutes = conn.execute(
                select(col(Organization.presentation_minutes)).where(
                    col(Organization.id) == caller.organization_id
                )
            ).scalar_one()
    finally:
        engine.dispose()
    assert minutes == setup.VP_MINUTES
    assert caller.did.endswith(caller.organization_id) and caller.api_key and caller.secret
