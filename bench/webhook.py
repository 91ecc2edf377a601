"""Decision-to-webhook benchmark: a subject's decision until its ``credential`` event arrives, beside
a bare Temporal update round trip on the same server.

``python -m bench.webhook`` (part of ``make bench``) starts its own stack (the ``make run`` stack
on free ports in a temporary directory), a webhook receiver on 127.0.0.1 in this process
(bench/webhook_receiver.py; loopback receivers are allowed outside production), and an
organization whose webhook points at it. Before any clock runs it takes every planned request
through the API and the approval page up to the decision: ``POST /request``, the code from the
development outbox, the code entered (bench/verify_setup.py). Then, in alternating rounds at the
same concurrency, after a warm-up:

(a) a bare update: ``execute_update`` on a workflow whose handler returns at once, run by a worker
    in this process on a task queue of its own (bench/bare_update.py), one running workflow per
    update;
(b) decision to webhook: the clock starts right before the approval page's form post (``POST
    /r/<token>/decide``, accept) and stops when the receiver has read the whole POST of that
    request's ``credential`` event (matched by the decrypted ``requestId`` after the arrival is
    noted). In between: the API, the ``decide`` update (the decision's record, the mandate's
    issuance, the event's row, the start of its delivery workflow) and the delivery's POST.

It prints p50/p99 of both, of the form post's own answer, and the ratio p50 (b) / p50 (a) (target
at most 3), the CPU each process spent per operation, and the median milestones of a sample of
decisions read from the workflows' histories (bench/webhook_timeline.py); it writes
bench/results/webhook-<timestamp>.json. ``--profile`` samples the worker and the API with py-spy
during one more round of decisions (not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import secrets
import time
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from temporalio.worker import Worker

from bench import verify_setup as setup
from bench.bare_update import EchoWorkflow, echo_updates, start_echoes
from bench.intake import RESULTS_DIR, add_postgres_option, local_stack_settings, run_in_temp_dir, run_on_stack
from bench.measure import Measurement, Phase, percentile
from bench.profile import Profiler, summarize
from bench.webhook_receiver import Receiver, Tally, WebhookSecrets
from bench.webhook_timeline import Trace, medians, show, timeline_of
from cli.stack import Stack
from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from store import audit
from store.db import make_engine, migrate

TARGET_RATIO = 3.0
WEBHOOK_TIMEOUT = 30.0  # a first attempt that failed is retried after 5 s: that shows as an outlier
PREPARE_CONCURRENCY = 8


def configure_webhook(settings: Settings, org_id: str, url: str, keys: WebhookSecrets) -> None:
    engine = make_engine(settings.sqlalchemy_url)
    cipher = SecretCipher(settings.master_key_bytes())
    audit.use_service_key(engine, cipher, settings)  # the change is an audit record
    try:
        ctx = Context(settings, engine, cipher)
        webhooks.configure(
            ctx, Actor.shell_operator("bench"), org_id, url, keys.signature, keys.encryption, keys.salt
        )
    finally:
        engine.dispose()


async def open_journeys(http: httpx.AsyncClient, signer: setup.Signer, n: int) -> list[setup.Journey]:
    run, gate = secrets.token_hex(3), asyncio.Semaphore(PREPARE_CONCURRENCY)

    async def one(i: int) -> setup.Journey:
        async with gate:
            return await setup.open_journey(http, signer, i, run, "webhook")

    return list(await asyncio.gather(*(one(i) for i in range(n))))


def ratio_of(decision: Measurement, bare: Measurement) -> float:
    """p50 decision to webhook over p50 bare update (target at most TARGET_RATIO)."""
    return decision.p50_ms / bare.p50_ms


class Decisions:
    """The i-th operation: accept the i-th journey's credential; its latency is until the
    receiver has the event (or False on a refusal, a wrong event or none in time)."""

    def __init__(self, http: httpx.AsyncClient, receiver: Receiver, journeys: list[setup.Journey]) -> None:
        self.http, self.receiver, self.journeys = http, receiver, journeys
        self.answered: dict[int, float] = {}  # seconds until the form post answered
        self.traces: dict[int, Trace] = {}
        self.failures: list[str] = []

    async def __call__(self, i: int) -> bool | float:
        journey = self.journeys[i]
        arrival = self.receiver.expect(journey.request_id)
        began, wall = time.perf_counter(), time.time()
        try:
            await setup.decide(self.http, journey)
            answered = time.perf_counter() - began
            got = await asyncio.wait_for(arrival, WEBHOOK_TIMEOUT)
        except (RuntimeError, httpx.HTTPError, TimeoutError) as exc:
            self.receiver.forget(journey.request_id)
            self._failed(f"{journey.request_id}: {type(exc).__name__} {str(exc)[:200]}")
            return False
        credential, decision = got.event.get("credential") or {}, got.event.get("decision") or {}
        if decision.get("action") != "accept" or credential.get("status") != "ACTIVE":
            self._failed(f"{journey.request_id}: {decision} {credential.get('status')}")
            return False
        self.answered[i] = answered
        self.traces[i] = Trace(journey.request_id, str(got.event["id"]), wall, wall + answered, got.wall)
        return got.at - began

    def _failed(self, what: str) -> None:
        if len(self.failures) < 5:
            self.failures.append(what)


async def run_bench(
    stack: Stack, args: argparse.Namespace, caller: setup.Caller, receiver: Receiver, load_before: float
) -> dict[str, Any]:
    n, c, rounds, warm = args.n, args.concurrency, args.rounds, args.warmup
    per_round = max(1, n // rounds)
    measured = range(warm, warm + per_round * rounds)
    total = warm + per_round * rounds + (per_round if args.profile else 0)
    client = await stack.client()
    queue = f"{stack.settings.task_queue}-bench-echo"
    signer = setup.Signer(caller, f"127.0.0.1:{stack.settings.api_port}")
    limits = httpx.Limits(max_connections=c + PREPARE_CONCURRENCY)
    async with (
        httpx.AsyncClient(base_url=f"http://{signer.host}", limits=limits, timeout=60) as http,
        Worker(client, task_queue=queue, workflows=[EchoWorkflow]),
    ):
        began = time.monotonic()
        journeys = await open_journeys(http, signer, total)
        echoes = await start_echoes(client, queue, total)
        took = time.monotonic() - began
        print(f"  prepared {total} journeys up to the decision and {total} echo workflows in {took:.1f}s")
        bare = Phase("bare Temporal update", echo_updates(client, echoes))
        decisions = Decisions(http, receiver, journeys)
        decision = Phase("decision -> webhook received", decisions)
        print(f"measuring {per_round * rounds} of each at concurrency {c}, in {rounds} alternating rounds")
        await bare.run(warm, c, stack, "warm-up: update", count=False)
        await decision.run(warm, c, stack, "warm-up: decision", count=False)
        for r in range(1, rounds + 1):
            await bare.run(per_round, c, stack, f"round {r}/{rounds}: update")
            await decision.run(per_round, c, stack, f"round {r}/{rounds}: decision")
        profiles = await profile_round(stack, decision, per_round, c) if args.profile else {}
    traces = [decisions.traces[i] for i in measured if i in decisions.traces]
    sample = traces[:: max(1, len(traces) // args.timeline)][: args.timeline] if args.timeline else []
    timeline = medians([await timeline_of(client, t) for t in sample])
    answered = sorted(v for i, v in decisions.answered.items() if i in measured)
    return summarize_run(
        args, stack, bare.result(), decision.result(), answered, receiver.tally, decisions.failures,
        (len(sample), timeline), profiles, load_before,
    )  # fmt: skip


async def profile_round(stack: Stack, decision: Phase, n: int, concurrency: int) -> dict[str, str]:
    """One more round of decisions, not counted, with py-spy on the worker and the API."""
    stamp = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}"
    out = {name: RESULTS_DIR / f"webhook-{name}-profile-{stamp}.txt" for name in ("worker", "api")}
    RESULTS_DIR.mkdir(parents=True, exist_ok=True)
    pids = {c.name: c.proc.pid for c in stack.children}
    async with Profiler(pids["worker"], out["worker"]), Profiler(pids["api"], out["api"]):
        await decision.run(n, concurrency, stack, "decisions under py-spy", count=False)
    return {name: summarize(path, process=name) for name, path in out.items() if path.exists()}


def report(bare: Measurement, decision: Measurement, answered: list[float], ratio: float) -> list[str]:
    lines = [f"  {'':<32}{'ops/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}"]
    for m in (bare, decision):
        lines.append(f"  {m.name:<32}{m.rate_per_second:>9.1f}{m.p50_ms:>9.1f}{m.p99_ms:>9.1f}{m.errors:>8}")
    p50, p99 = (percentile(answered, q) * 1000 for q in (0.5, 0.99))
    lines.append(f"  {'  of which POST /decide answered':<32}{'':>9}{p50:>9.1f}{p99:>9.1f}")
    verdict = f"{'meets' if ratio <= TARGET_RATIO else 'MISSES'} the target {TARGET_RATIO:g}x"
    lines.append(f"  {'ratio p50 decision / update':<32}{ratio:>9.1f}   {verdict}")
    names = list(decision.cpu_ms_per_op)
    lines.append(f"\n  CPU ms per operation{'':<12}{''.join(f'{k:>14}' for k in names)}")
    for m in (bare, decision):
        lines.append(f"  {m.name:<32}{''.join(f'{m.cpu_ms_per_op.get(k, 0):>14.2f}' for k in names)}")
    return lines


def summarize_run(
    args: argparse.Namespace,
    stack: Stack,
    bare: Measurement,
    decision: Measurement,
    answered: list[float],
    tally: Tally,
    failures: list[str],
    sampled: tuple[int, list[tuple[str, float]]],  # decisions read, their median milestones
    profiles: dict[str, str],
    load_before: float,
) -> dict[str, Any]:
    ratio, (sample, timeline) = ratio_of(decision, bare), sampled
    print("\n" + "\n".join(report(bare, decision, answered, ratio)))
    for failure in failures:
        print(f"  failed: {failure}")
    print(f"  receiver: {asdict(tally)}")
    if timeline:
        print(f"\n  median milestones of {sample} decisions, ms after the form post began:")
        print(show(timeline))
    for name, text in profiles.items():
        print(f"\nprofile of the {name} during decisions:\n{text}")
    cpus, load_after = os.cpu_count() or 1, os.getloadavg()[0]
    print(f"\n  {cpus} CPUs; load average {load_before:.1f} before, {load_after:.1f} after")
    if load_before > cpus:
        print("  warning: the machine was busy with other work; the latencies are not representative")
    return {
        "config": {
            "n": decision.count,
            "rounds": args.rounds,
            "concurrency": args.concurrency,
            "warmup": args.warmup,
            "api_workers": args.api_workers,
            "database": "postgresql" if stack.settings.database_url else "sqlite",
            "cpus": cpus,
            "load_average": [load_before, load_after],
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "bare_update": asdict(bare),
        "decision_to_webhook": asdict(decision),
        "post_decide_answered_ms": {
            "p50": percentile(answered, 0.5) * 1000,
            "p99": percentile(answered, 0.99) * 1000,
        },
        "ratio": ratio,
        "target_ratio": TARGET_RATIO,
        "meets_target": ratio <= TARGET_RATIO,
        "receiver": asdict(tally),
        "failures": failures,
        "timeline": {"decisions": sample, "median_ms_after_form_post": dict(timeline)},
    }


HookedBench = Callable[[Stack, setup.Caller, Receiver, float], Coroutine[Any, Any, dict[str, Any]]]


async def on_hooked_stack(
    kind: str,
    var_dir: Path,
    database_url: str,
    api_workers: int,
    bench: HookedBench,
    make_stack: Callable[[Settings], Stack] | None = None,
) -> int:
    """``bench(stack, organization, receiver, load average before)`` on a fresh stack whose one
    organization sends its webhook to ``receiver``; the result written as ``kind``'s. The stack is
    ``make_stack(settings)`` when given (``bench.webhook_instructions``: its worker under callgrind)."""
    # the stack's processes inherit it: the receiver is http on 127.0.0.1 (adapters.egress allows it
    # outside production unless this says false; say so whatever the caller's environment says)
    os.environ["MANDATUM_WEBHOOK_ALLOW_LOOPBACK"] = "true"
    settings = local_stack_settings(var_dir, database_url)
    migrate(settings.sqlalchemy_url)
    caller = setup.create_organization(settings, f"{kind.capitalize()} benchmark")
    keys = WebhookSecrets.generate()
    async with Receiver(keys) as receiver:
        configure_webhook(settings, caller.organization_id, receiver.url, keys)
        stack = make_stack(settings) if make_stack else Stack(settings, echo=False, api_workers=api_workers)
        return await run_on_stack(
            stack, kind, lambda load_before: bench(stack, caller, receiver, load_before)
        )


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    return await on_hooked_stack(
        "webhook",
        var_dir,
        database_url,
        args.api_workers,
        lambda stack, caller, receiver, load: run_bench(stack, args, caller, receiver, load),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webhook",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=200, help="operations measured of each kind")
    parser.add_argument("--rounds", type=int, default=4, help="alternating rounds the operations fill")
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=12, help="unmeasured operations of each kind")
    parser.add_argument("--api-workers", type=int, default=1, help="uvicorn processes (make run uses 1)")
    parser.add_argument(
        "--timeline", type=int, default=20, help="decisions whose histories are read afterwards (0: none)"
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="then sample the worker and the API with py-spy during one more round (pip install py-spy)",
    )
    add_postgres_option(parser)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    run_in_temp_dir(parse_args(argv), main_async)


if __name__ == "__main__":
    main()
