"""Verify under use limits against verify without, same run (issue 31).

``python -m bench.verify_limits`` (``--postgres`` for PostgreSQL) starts its own stack as
bench/verify.py does (Temporal dev server, worker, API on free ports in a temporary directory),
creates an organization with the example action and a second action, the same but for two use
limits: an ``executions`` limit too large ever to run out and a ``sum`` of the amount with a budget
too large ever to be spent. Mandates of each are issued the honest way (``POST /request``, the
subject's code and acceptance on the approval page), then, before any clock runs, one fresh VP per
planned verification of each kind and every request signed. After a warm-up of each, it measures
in alternating rounds at 32 clients in a closed loop (the first kind of each round alternates too):
(a) ``POST /credential/verify`` of a mandate without limits, the baseline; (b) the same of a
mandate under the two limits: each allowed verification also locks its mandate's row, counts
both limits on it and writes its usage in the verification's transaction (``store.limit_use``).
Every verification must be allowed (anything else is an error).

It prints both rates, p50/p99, the ratio (b)/(a) against the target (>= 0.85), the CPU of each
process per call and the machine's load average, checks that the limited mandates' stored usage
counts exactly the allowed verifications, and writes bench/results/verify-limits-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import math
import os
from dataclasses import asdict
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
from sqlmodel import col, select

from bench import verify_setup as setup
from bench.intake import add_postgres_option, local_stack_settings, run_in_temp_dir, run_on_stack
from bench.measure import Measurement
from bench.verify import Load, print_cpu, run_config
from bench.verify_setup import Series, not_allowed
from cli.devstack import EXAMPLE_ACTION
from cli.stack import Stack
from store import actions
from store.db import make_engine, migrate, read_session
from store.tables import Credential

TARGET_RATIO = 0.85
NEVER_SPENT_USES = 1_000_000_000  # executions: more than any run can make
NEVER_SPENT_BUDGET = 10**14  # sum of amounts: 950 a verification, never reached
LIMITS = [
    {"name": "uses", "kind": "executions", "max": NEVER_SPENT_USES},
    {"name": "budget", "kind": "sum", "param": "amount", "max": NEVER_SPENT_BUDGET, "unit": "EUR"},
]
LIMITED_ACTION: dict[str, Any] = {**EXAMPLE_ACTION, "name": "Rent payments, limited", "limits": LIMITS}
KINDS = ("plain", "limited")
AMOUNT = Decimal(str(setup.EXECUTION_PARAMS["amount"]))  # what each verification adds to the budget


def install_limited_action(database_url: str, org_id: str) -> str:
    """The limited action published in the organization: its id."""
    engine = make_engine(database_url)
    try:
        return actions.install_published(engine, org_id, LIMITED_ACTION).action_id
    finally:
        engine.dispose()


def credential_of(action_id: str) -> dict[str, Any]:
    """The credential of a request for a mandate of ``action_id`` (the example's user params)."""
    return {
        **setup.RENT,
        "name": "Rent payments, limited",
        "action": {**setup.RENT["action"], "id": action_id},
    }


def round_order(r: int) -> tuple[str, str]:
    """The kinds in round ``r``: each goes first in every other round."""
    return KINDS if r % 2 == 0 else (KINDS[1], KINDS[0])


def usage_counted(database_url: str, mandate_ids: list[str]) -> tuple[int, Decimal]:
    """The allowed verifications and the amount the limited mandates' rows have counted."""
    engine = make_engine(database_url)
    try:
        with read_session(engine) as session:
            rows = session.exec(select(Credential.usage).where(col(Credential.mandate_id).in_(mandate_ids)))
            usages = [u or {} for u in rows]
    finally:
        engine.dispose()
    uses = sum(int(u.get("uses", {}).get("u", 0)) for u in usages)
    return uses, sum((Decimal(u.get("budget", {}).get("u", 0)) for u in usages), Decimal(0))


async def prepare(
    stack: Stack, load: Load, caller: setup.Caller, args: argparse.Namespace, limited_action: str, wanted: int
) -> tuple[dict[str, list[bytes]], dict[str, list[str]]]:
    """Mandates of each kind, ``wanted`` VPs of each, and their signed verify requests."""
    signer = setup.Signer(caller, f"127.0.0.1:{stack.settings.api_port}")
    credentials = {"plain": setup.RENT, "limited": credential_of(limited_action)}
    mandates: dict[str, list[str]] = {}
    async with httpx.AsyncClient(base_url=f"http://{signer.host}", timeout=60) as http:
        for kind in KINDS:
            mandates[kind] = await setup.issue_mandates(
                http, await stack.client(), signer, args.mandates, credentials[kind]
            )
    requests: dict[str, list[bytes]] = {}
    for kind in KINDS:
        out, _ = await load.run(
            signer.presentations(mandates[kind], wanted), label=f"obtaining {wanted} VPs ({kind})"
        )
        vps, problems = setup.presentations_of(out.statuses, out.bodies)
        if len(vps) < wanted:
            raise RuntimeError(f"only {len(vps)} of {wanted} VPs: {dict(problems.most_common(3))}")
        requests[kind] = signer.verifications(vps)
    return requests, mandates


async def run_bench(
    stack: Stack, args: argparse.Namespace, caller: setup.Caller, tmp: Path, load_before: float
) -> dict[str, Any]:
    rounds, round_s = args.rounds, args.duration / args.rounds
    per_round, warm = math.ceil(round_s * args.max_rate), math.ceil(args.warmup * args.max_rate)
    database_url = stack.settings.sqlalchemy_url
    limited_action = install_limited_action(database_url, caller.organization_id)
    load = Load(stack, args.concurrency, tmp)
    print(f"preparing: {args.mandates} mandates and {warm + rounds * per_round} VPs of each kind")
    requests, mandates = await prepare(stack, load, caller, args, limited_action, warm + rounds * per_round)
    print(f"measuring {args.duration:g}s of each at {args.concurrency} clients, {rounds} alternating rounds")
    series = {"plain": Series("verify, no limits"), "limited": Series("verify, executions + sum limits")}
    others: dict[str, int] = {}
    allowed = {"plain": 0, "limited": 0}
    rates: dict[str, list[float]] = {"plain": [], "limited": []}  # of each round

    async def measured(kind: str, mine: list[bytes], seconds: float, label: str) -> tuple[Any, Any]:
        out, cpu = await load.run(mine, seconds=seconds, label=label)
        seen = setup.verdicts(out.statuses, out.bodies)
        allowed[kind] += seen["allow"]
        for k, n in seen.items():
            if k != "allow":
                others[f"{kind}: {k}"] = others.get(f"{kind}: {k}", 0) + n
        return out, cpu

    for kind in KINDS:
        await measured(kind, requests[kind][:warm], args.warmup, f"warm-up: {kind}")
    for r in range(rounds):
        for kind in round_order(r):
            mine = requests[kind][warm + r * per_round :][:per_round]
            out, cpu = await measured(kind, mine, round_s, f"round {r + 1}/{rounds}: {kind}")
            series[kind].add(out, cpu, not_allowed(out)[0], len(mine))
            rates[kind].append(len(out.latencies) / max(out.seconds, 1e-9))
    counted = usage_counted(database_url, mandates["limited"])
    result = summarize(args, stack, series, others, load_before, allowed["limited"], counted)
    each = [limited / plain for plain, limited in zip(rates["plain"], rates["limited"], strict=True)]
    print(f"  ratio in each round: {', '.join(f'{r:.2f}' for r in each)}")
    return {**result, "rates_per_round": rates, "ratio_per_round": each}


def summarize(
    args: argparse.Namespace,
    stack: Stack,
    series: dict[str, Series],
    others: dict[str, int],
    load_before: float,
    allowed_limited: int,
    counted: tuple[int, Decimal],
) -> dict[str, Any]:
    plain, limited = series["plain"].result(), series["limited"].result()
    ratio = print_rates(plain, limited)
    uses, amount = counted
    consistent = uses == allowed_limited and amount == allowed_limited * AMOUNT
    checks = {
        f"ratio >= {TARGET_RATIO:g}": ratio >= TARGET_RATIO,
        "every verification allowed": plain.errors == 0 and limited.errors == 0,
        "the limited mandates counted every allowed one": consistent,
    }
    print(f"  usage counted: {uses} uses, {amount} of the budget, for {allowed_limited} allowed")
    for name, ok in checks.items():
        print(f"  {'meets' if ok else 'MISSES':>6}  {name}")
    for reason, n in others.items():
        print(f"  not allowed: {n} x {reason}")
    if series["plain"].exhausted or series["limited"].exhausted:
        print("  note: some rounds used up their prepared requests early; raise --max-rate")
    cores = print_cpu([plain, limited], list(limited.cpu_ms_per_op))
    cpus, load_after = os.cpu_count() or 1, os.getloadavg()[0]
    print(f"\n  {cpus} CPUs; load average {load_before:.1f} before, {load_after:.1f} after")
    if load_before > cpus:
        print("  warning: the machine was busy with other work; compare the ratio, not the rates")
    return {
        "config": run_config(args, stack, cpus, [load_before, load_after]),
        "plain": asdict(plain),
        "limited": asdict(limited),
        "ratio_limited_to_plain": ratio,
        "usage_counted": {"uses": uses, "amount": str(amount), "allowed": allowed_limited},
        "not_allowed": others,
        "cores_used": cores,
        "target_ratio": TARGET_RATIO,
        "checks": checks,
    }


def print_rates(plain: Measurement, limited: Measurement) -> float:
    """The rates and latencies of both kinds; the ratio of their throughputs, limited / plain."""
    print(f"\n  {'':<40}{'calls/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for m in (plain, limited):
        print(f"  {m.name:<40}{m.rate_per_second:>9.1f}{m.p50_ms:>9.1f}{m.p99_ms:>9.1f}{m.errors:>8}")
    ratio = limited.rate_per_second / plain.rate_per_second
    print(f"  {'ratio limited / no limits (throughput)':<40}{ratio:>9.2f}   (target >= {TARGET_RATIO:g})")
    return ratio


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    settings = local_stack_settings(var_dir, database_url)
    migrate(settings.sqlalchemy_url)
    caller = setup.create_organization(settings, "Verify limits benchmark")
    stack = Stack(settings, echo=False, api_workers=args.api_workers)
    return await run_on_stack(
        stack, "verify-limits", lambda load_before: run_bench(stack, args, caller, var_dir, load_before)
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.verify_limits",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--duration", type=float, default=12.0, help="seconds measured of each kind, split into the rounds"
    )
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--warmup", type=float, default=2.0, help="unmeasured seconds of each kind")
    parser.add_argument("--concurrency", type=int, default=32, help="clients (connections)")
    parser.add_argument(
        "--max-rate",
        type=float,
        default=600.0,
        help="VPs prepared per second of verify time, of each kind (a faster server ends early)",
    )
    parser.add_argument(
        "--mandates", type=int, default=8, help="mandates of each kind the VPs are spread over"
    )
    parser.add_argument(
        "--api-workers", type=int, default=1, help="uvicorn worker processes (make run uses 1)"
    )
    parser.set_defaults(paced=0.0)  # bench.verify's run_config names its open loop: none here
    db = parser.add_mutually_exclusive_group()
    db.add_argument(
        "--database-url",
        default="",
        metavar="URL",
        help="an existing database to migrate and use (default: SQLite in the temp dir)",
    )
    add_postgres_option(db)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run_in_temp_dir(args, main_async, args.database_url)


if __name__ == "__main__":
    main()
