"""What a request's life and a verification leave behind (issue 35, the capacity model): counts,
not speeds, so they hold on any machine and need no quiet one.

On a throw-away PostgreSQL database under ``make run``'s processes (``bench.intake``'s stack):

1. ``--requests`` request lives, each a ``POST /request``, its code sent and entered, the
   subject's acceptance, the mandate issued and the ``credential`` event received by a webhook
   receiver; then ``--verifications`` verifications (``POST /credential/verify``, allowed) of VPs
   obtained beforehand.
2. Around each phase, the database's own counters (``pg_stat_database``: rows inserted, updated,
   deleted, transactions committed) and its size (``pg_database_size``), read once every process
   is idle and the statistics have been flushed; divided by the operations.
3. Temporal's history events per request: the request workflow's and its delivery children's,
   read from the server, by event type.

    .venv/bin/python -m bench.footprint [--requests 20] [--verifications 200] [--postgres URL]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import psycopg
from temporalio.client import Client

from bench import verify_setup as setup
from bench.intake import (
    PG_ADMIN_URL,
    add_postgres_option,
    run_in_temp_dir,
)
from bench.webhook import on_hooked_stack
from bench.webhook_receiver import Receiver
from cli.stack import Stack
from workflows.ids import request_workflow_id

COUNTERS = ("tup_inserted", "tup_updated", "tup_deleted", "xact_commit")
# a backend flushes its statistics at most every second, and an idle one within 10 s (PostgreSQL's
# PGSTAT_IDLE_INTERVAL): the pooled connections of the API and the worker stay open, so wait it out
SETTLE_SECONDS = 11.0


@dataclass
class Footprint:
    operation: str
    count: int
    rows_inserted: float
    rows_updated: float
    rows_deleted: float
    commits: float
    bytes_grown: float


async def database_counters(url: str, settle: float = SETTLE_SECONDS) -> dict[str, int]:
    """The database's counters and size, after the other processes' statistics are flushed."""
    await asyncio.sleep(settle)
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute("SELECT pg_stat_clear_snapshot()")
        cur = await conn.execute(
            "SELECT tup_inserted, tup_updated, tup_deleted, xact_commit,"
            " pg_database_size(current_database())"
            " FROM pg_stat_database WHERE datname = current_database()"
        )
        row = await cur.fetchone()
    assert row is not None
    return {**dict(zip(COUNTERS, (int(v) for v in row[:-1]), strict=True)), "size": int(row[-1])}


async def measured(
    url: str,
    operation: str,
    count: int,
    work: Callable[[], Awaitable[object]],
    settle: float = SETTLE_SECONDS,
) -> tuple[Footprint, Any]:
    """``work()``'s result and what it left in the database per operation. The reading itself is
    one transaction at each end (not subtracted: under one per operation at these counts)."""
    before = await database_counters(url, settle)
    result = await work()
    after = await database_counters(url, settle)
    delta = {k: after[k] - before[k] for k in after}
    return (
        Footprint(
            operation,
            count,
            delta["tup_inserted"] / count,
            delta["tup_updated"] / count,
            delta["tup_deleted"] / count,
            delta["xact_commit"] / count,
            delta["size"] / count,
        ),
        result,
    )


async def request_lives(
    http: httpx.AsyncClient, signer: setup.Signer, receiver: Receiver, n: int
) -> list[str]:
    """``n`` requests from ``POST /request`` to their ``credential`` event received, 4 at a time."""
    run, gate = secrets.token_hex(3), asyncio.Semaphore(4)

    async def one(i: int) -> str:
        async with gate:
            journey = await setup.open_journey(http, signer, i, run, "footprint")
            arrival = receiver.expect(journey.request_id)
            await setup.decide(http, journey)
            await asyncio.wait_for(arrival, 30)
            return journey.request_id

    return list(await asyncio.gather(*(one(i) for i in range(n))))


async def presentations(http: httpx.AsyncClient, signer: setup.Signer, n: int) -> list[Any]:
    """``n`` VPs of a few mandates (each VP is single-use), obtained before any counter is read."""
    mandates = await setup.issue_mandates(http, None, signer, min(n, 8))
    body = setup.compact({"targetVerifier": signer.caller.did})
    found = []
    for i in range(n):
        path = f"/credential/{quote(mandates[i % len(mandates)], safe='')}/presentation"
        got = await http.post(path, content=body, headers=signer.headers(body))
        if got.status_code != 200:
            raise RuntimeError(f"presentation: {got.status_code} {got.text[:200]}")
        found.append(got.json()["data"]["presentation"])
    return found


async def verifications(http: httpx.AsyncClient, signer: setup.Signer, vps: list[Any]) -> Counter[str]:
    seen: Counter[str] = Counter()
    for vp in vps:
        body = setup.compact({"presentation": vp, "executionParams": setup.EXECUTION_PARAMS})
        got = await http.post("/credential/verify", content=body, headers=signer.headers(body))
        seen[str(got.json().get("decision")) if got.status_code == 200 else str(got.status_code)] += 1
    return seen


async def history_events(client: Client, request_ids: list[str]) -> dict[str, Any]:
    """History events per request: its workflow's and its delivery children's, by type."""
    per_request: list[int] = []
    by_type: Counter[str] = Counter()
    for request_id in request_ids:
        total = 0
        history = await client.get_workflow_handle(request_workflow_id(request_id)).fetch_history()
        children = [
            e.child_workflow_execution_started_event_attributes.workflow_execution.workflow_id
            for e in history.events
            if e.HasField("child_workflow_execution_started_event_attributes")
        ]
        for events in [history.events] + [
            (await client.get_workflow_handle(c).fetch_history()).events for c in children
        ]:
            total += len(events)
            by_type.update(type_name(e.event_type) for e in events)
        per_request.append(total)
    n = len(request_ids)
    return {
        "per_request": sorted(per_request),
        "median": sorted(per_request)[n // 2],
        "by_type_per_request": {k: round(v / n, 2) for k, v in by_type.most_common()},
    }


def type_name(event_type: int) -> str:
    from temporalio.api.enums.v1 import EventType

    return EventType.Name(EventType.ValueType(event_type)).removeprefix("EVENT_TYPE_")


async def run_bench(
    stack: Stack, args: argparse.Namespace, caller: setup.Caller, receiver: Receiver
) -> dict[str, Any]:
    url = stack.settings.sqlalchemy_url.replace("postgresql+psycopg://", "postgresql://")
    signer = setup.Signer(caller, f"127.0.0.1:{stack.settings.api_port}")
    client = await stack.client()
    async with httpx.AsyncClient(base_url=f"http://{signer.host}", timeout=60) as http:
        lives, request_ids = await measured(
            url, "request life", args.requests, lambda: request_lives(http, signer, receiver, args.requests)
        )
        print(f"  {args.requests} request lives done")
        vps = await presentations(http, signer, args.verifications)
        verifies, verdicts = await measured(
            url, "verification", args.verifications, lambda: verifications(http, signer, vps)
        )
    if verdicts != Counter({"allow": args.verifications}):
        raise RuntimeError(f"the verifications were not all allowed: {dict(verdicts)}")
    histories = await history_events(client, request_ids)
    rows = [lives, verifies]
    print(
        f"\n  {'per operation':<16}{'inserted':>10}{'updated':>10}{'deleted':>10}{'commits':>10}{'bytes':>10}"
    )
    for f in rows:
        print(
            f"  {f.operation:<16}{f.rows_inserted:>10.1f}{f.rows_updated:>10.1f}{f.rows_deleted:>10.1f}"
            f"{f.commits:>10.1f}{f.bytes_grown:>10.0f}"
        )
    print(f"\n  Temporal history events per request (workflow + deliveries): median {histories['median']}")
    for name, per in histories["by_type_per_request"].items():
        print(f"    {name:<48}{per:>8}")
    return {
        "config": {"requests": args.requests, "verifications": args.verifications, "database": "postgresql"},
        "footprints": [asdict(f) for f in rows],
        "history_events": histories,
        "at": datetime.now(UTC).isoformat(),
        "load_average": os.getloadavg()[0],
    }


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    return await on_hooked_stack(
        "footprint",
        var_dir,
        database_url,
        1,
        lambda stack, caller, receiver, _load: run_bench(stack, args, caller, receiver),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.footprint",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--requests", type=int, default=20, help="request lives measured")
    parser.add_argument("--verifications", type=int, default=200, help="verifications measured")
    add_postgres_option(parser)
    args = parser.parse_args(argv)
    args.postgres = args.postgres or PG_ADMIN_URL  # the counters are PostgreSQL's
    return args


def main(argv: list[str] | None = None) -> None:
    run_in_temp_dir(parse_args(argv), main_async)


if __name__ == "__main__":
    main()
