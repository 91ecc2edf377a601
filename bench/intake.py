"""Intake benchmark: signed ``POST /request`` over HTTP against bare Temporal workflow starts.

``python -m bench.intake`` (or ``make bench``) starts its own stack (the ``make run`` stack from
cli.devstack, on free ports in a temporary directory), creates an organization whose request rate
will not get in the way, and measures in the same run:

(a) ``client.start_workflow`` of the CredentialRequest workflow on that Temporal server, with the
    id policy and search attributes the API uses, on a task queue no worker polls: the ceiling;
(b) signed ``POST /request`` over real HTTP, each body unique and each signature fresh: the
    whole path (auth, replay guard, rate limit, one transaction, workflow start, mark started).

Both at the same concurrency, after a short warm-up. It prints rates, p50/p99 latencies and the
ratio (b)/(a) (target >= 0.5), and writes bench/results/intake-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import secrets
import signal
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import asdict
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import func
from sqlmodel import col, select

from api.signing import sign
from bench.measure import TARGET_RATIO, Phase, report
from bench.profile import Profiler, summarize
from cli.devstack import publish_example_action
from cli.stack import Stack
from core.ids import new_object_id
from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from orchestration.temporal import start_workflow_for
from store import orgs
from store.db import make_engine, migrate, read_session
from store.tables import CredentialRequest
from tests.support.ports import free_port
from workflows.ids import request_workflow_id
from workflows.messages import CredentialRequestInput

RESULTS_DIR = Path(__file__).resolve().parent / "results"
PG_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"


def temporal_starts(stack: Stack, org_id: str) -> Callable[[int], Awaitable[bool]]:
    # No worker polls this queue: the bare cost of a start, and no backlog of first workflow
    # tasks left for the worker to chew on while the next phase runs.
    unpolled = f"{stack.settings.task_queue}-bench-unpolled"

    async def start(_: int) -> bool:
        client = await stack.client()
        inp = CredentialRequestInput(
            request_id=new_object_id(),
            organization_id=org_id,
            security_level="CONTACT",
            subject_ids=[str(uuid.uuid4())],
            credential_ids=[new_object_id()],
            expires_at=datetime.now(UTC) + timedelta(days=30),
        )
        await start_workflow_for(client, unpolled, inp)  # exactly what the API's start does
        return True

    return start


def signed_posts(
    http: httpx.AsyncClient, api_key: str, secret: str, failures: list[str], created: list[str]
) -> Callable[[int], Awaitable[bool]]:
    run = secrets.token_hex(3)

    async def post(i: int) -> bool:
        body = json.dumps(
            {
                "contacts": [f"bench-{run}-{i}@example.com"],
                "securityLevel": "CONTACT",
                "name": f"Bench {run} #{i}",
                "internalId": f"bench-{run}-{i}",
                "credentials": [
                    {
                        "type": "POLICY",
                        "name": "Payments up to a limit",
                        "scope": "payments",
                        "action": {
                            "id": "urn:via:action:0b1e4c1a-7f1d-4a7e-9a55-1f2b3c4d5e6f",
                            "userParams": {"maxAmount": 100 + i},
                        },
                    }
                ],
            },
            separators=(",", ":"),
        ).encode()
        timestamp = str(int(time.time() * 1000))
        response = await http.post(
            "/request",
            content=body,
            headers={
                "Authorization": f"Bearer {api_key}",
                "X-Timestamp": timestamp,
                "X-Signature": sign(secret, timestamp, body),
                "Content-Type": "application/json",
            },
        )
        if response.status_code != 201:
            if len(failures) < 5:
                failures.append(f"{response.status_code} {response.text[:200]}")
            return False
        created.append(response.json()["data"]["id"])
        return True

    return post


@contextmanager
def postgres_database(admin_url: str) -> Iterator[str]:
    import psycopg

    name = f"mandatum_bench_{secrets.token_hex(4)}"
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield admin_url.rsplit("/", 1)[0] + "/" + name
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@asynccontextmanager
async def profiled(stack: Stack, output: Path | None) -> AsyncIterator[None]:
    if output is None:
        yield
        return
    output.parent.mkdir(parents=True, exist_ok=True)
    api = next(c for c in stack.children if c.name == "api")
    async with Profiler(api.proc.pid, output):
        yield


def unstarted(settings: Settings, org_id: str) -> int:
    engine = make_engine(settings.sqlalchemy_url)
    try:
        with read_session(engine) as session:
            return int(
                session.exec(
                    select(func.count())
                    .select_from(CredentialRequest)
                    .where(
                        CredentialRequest.organization_id == org_id,
                        col(CredentialRequest.workflow_started_at).is_(None),
                    )
                ).one()
            )
    finally:
        engine.dispose()


async def drained(stack: Stack, request_id: str) -> None:
    """Wait until the worker has run the first task of the last request's workflow (a query is
    answered only then), so no backlog of the intake round slows the next bare-start round."""
    client = await stack.client()
    handle = client.get_workflow_handle(request_workflow_id(request_id))
    await asyncio.wait_for(handle.query("status"), 60)


async def run_bench(
    stack: Stack, args: argparse.Namespace, org_id: str, api_key: str, secret: str, load_before: float
) -> dict[str, object]:
    settings = stack.settings
    n, c, rounds = args.n, args.concurrency, args.rounds
    per_round = max(1, n // rounds)
    print(f"measuring {per_round * rounds} of each at concurrency {c}, in {rounds} alternating rounds")
    bare = Phase("Temporal start_workflow", temporal_starts(stack, org_id))
    failures: list[str] = []
    created: list[str] = []
    limits = httpx.Limits(max_connections=c, max_keepalive_connections=c)
    base = f"http://127.0.0.1:{settings.api_port}"
    profile = RESULTS_DIR / f"api-profile-{datetime.now(UTC):%Y%m%dT%H%M%SZ}.txt"
    async with httpx.AsyncClient(base_url=base, limits=limits, timeout=60) as http:
        intake = Phase("POST /request (signed HTTP)", signed_posts(http, api_key, secret, failures, created))
        await bare.run(args.warmup, c, stack, "warm-up: start_workflow", count=False)
        await intake.run(args.warmup, c, stack, "warm-up: POST /request", count=False)
        async with profiled(stack, profile if args.profile else None):
            for r in range(1, rounds + 1):
                if created:
                    await drained(stack, created[-1])
                await bare.run(per_round, c, stack, f"round {r}/{rounds}: start_workflow")
                await intake.run(per_round, c, stack, f"round {r}/{rounds}: POST /request")
    for failure in failures:
        print(f"  failed: {failure}")
    load_after = os.getloadavg()[0]
    left = await asyncio.to_thread(unstarted, settings, org_id)
    a, b = bare.result(), intake.result()
    ratio = b.rate_per_second / a.rate_per_second
    report(a, b, ratio)
    cpus = os.cpu_count() or 1
    print(f"\n  {cpus} CPUs; load average {load_before:.1f} before, {load_after:.1f} after")
    if load_before > cpus:  # measured before this run added its own
        print("  warning: the machine was busy with other work; the rates are not representative")
    if left:
        print(f"  warning: {left} created requests have no started workflow yet")
    if args.profile and profile.exists():
        print(f"\nprofile of the API during POST /request ({profile}):\n{summarize(profile)}")
    return {
        "config": {
            "n": per_round * rounds,
            "rounds": rounds,
            "concurrency": c,
            "warmup": args.warmup,
            "api_workers": args.api_workers,
            "database": "postgresql" if settings.database_url else "sqlite",
            "cpus": cpus,
            "load_average": [load_before, load_after],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "temporal_start_workflow": asdict(a),
        "post_request": asdict(b),
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "requests_without_workflow": left,
    }


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    settings = local_stack_settings(var_dir, database_url)
    migrate(settings.sqlalchemy_url)
    engine = make_engine(settings.sqlalchemy_url)
    org, key = orgs.create_organization(
        engine, SecretCipher(settings.master_key_bytes()), "Benchmark", request_rate_per_minute=1_000_000
    )
    publish_example_action(engine, org.id)
    engine.dispose()
    stack = Stack(settings, echo=False, api_workers=args.api_workers)
    return await run_on_stack(
        stack,
        "intake",
        lambda load_before: run_bench(stack, args, org.id, key.api_key, key.signature_secret, load_before),
    )


def local_stack_settings(var_dir: Path, database_url: str) -> Settings:
    """The ``make run`` settings on free ports in ``var_dir`` (a benchmark's own stack)."""
    return Settings(  # the public URL follows the API port, as for `make run`
        environment=Environment.DEVELOPMENT,
        var_dir=var_dir,
        database_url=database_url,
        temporal_address=f"127.0.0.1:{free_port()}",
        temporal_ui_port=free_port(),
        api_port=free_port(),
    )


async def run_on_stack(
    stack: Stack, kind: str, bench: Callable[[float], Coroutine[Any, Any, dict[str, Any]]]
) -> int:
    """Start ``stack``, run ``bench(load average before)`` on it (Ctrl-C stops both), stop the
    stack, and write the result to ``bench/results/<kind>-<timestamp>.json``. The exit code."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stack.on_signal)
    began, load_before = time.monotonic(), os.getloadavg()[0]
    try:
        print(
            f"starting Temporal, worker and API ({stack.api_workers} process) in {stack.settings.var_dir} ..."
        )
        await stack.start()
        print(f"stack ready in {time.monotonic() - began:.1f}s")
        task = asyncio.create_task(bench(load_before))
        stopper = asyncio.create_task(stack.stop_requested.wait())
        await asyncio.wait([task, stopper], return_when=asyncio.FIRST_COMPLETED)
        stopper.cancel()
        if not task.done():
            task.cancel()
            print("\ninterrupted")
            return 130
        result = task.result()
    finally:
        await stack.stop()
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
    out = RESULTS_DIR / f"{kind}-{stamp}.json"
    out.write_text(json.dumps({"started_at": stamp, **result}, indent=2))
    print(f"\nwrote {out} (total {time.monotonic() - began:.0f}s)")
    return 0


def add_postgres_option(parser: argparse.ArgumentParser | argparse._MutuallyExclusiveGroup) -> None:
    """``--postgres [ADMIN_URL]``, shared by the benchmarks: ``run_in_temp_dir`` makes the
    throw-away database on that server."""
    parser.add_argument(
        "--postgres",
        nargs="?",
        const=PG_ADMIN_URL,
        default=None,
        metavar="ADMIN_URL",
        help=f"use a throw-away PostgreSQL database instead of SQLite (default server {PG_ADMIN_URL})",
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.intake",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=400, help="operations measured of each kind")
    parser.add_argument(
        "--rounds", type=int, default=4, help="alternating rounds the operations are split into"
    )
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=32, help="unmeasured operations per phase")
    parser.add_argument(
        "--api-workers", type=int, default=1, help="uvicorn worker processes (make run uses 1)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the API with py-spy during the POST phase (pip install py-spy)",
    )
    add_postgres_option(parser)
    return parser.parse_args(argv)


BenchMain = Callable[[argparse.Namespace, Path, str], Coroutine[Any, Any, int]]


def run_in_temp_dir(args: argparse.Namespace, bench: BenchMain, database_url: str = "") -> None:
    """Run ``bench(args, temp dir, database URL)`` and exit with its code: on a throw-away
    PostgreSQL database with ``--postgres``, else on ``database_url`` (empty: SQLite in the temp
    dir)."""
    with tempfile.TemporaryDirectory(prefix="mandatum-bench-") as tmp:
        if args.postgres:
            with postgres_database(args.postgres) as url:
                code = asyncio.run(bench(args, Path(tmp), url))
        else:
            code = asyncio.run(bench(args, Path(tmp), database_url))
    sys.exit(code)


def main(argv: list[str] | None = None) -> None:
    run_in_temp_dir(parse_args(argv), main_async)


if __name__ == "__main__":
    main()
