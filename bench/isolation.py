"""Isolation benchmark (issue 30): one organization's costliest rules against another's verifications.

``python -m bench.isolation`` starts its own stack (as bench/verify.py does) with two organizations:

- the *victim* verifies with the example action (two ordinary rules, evaluated inline) in a closed
  loop of ``--victim-clients``;
- the *attacker* publishes the most expensive rule publishing accepts: every item compared with
  every other one (``items.all(x, items.exists_one(y, y == x))``), with ``maxItems`` the largest
  whose estimate fits the budget (policy.cost), and verifies at that largest input, ``items``
  full of distinct strings of the declared maxLength, as fast as ``--attacker-clients`` can.

Meanwhile an unsigned ``GET /healthz`` runs in an open loop at ``--healthz-rate``. Rounds alternate
between the victim alone and the victim under attack, each with the prober, so both conditions see
the same machine. Reported: the victim's rate and p99 alone and under attack (target: at least half
the rate alone), ``/healthz``'s p99 in both (target: under 50 ms), what the attacker got (every one
of its verifications is denied ``rule_limit_exceeded`` or allowed within the budget; 429s when too
many wait), and the CPU of the API, its evaluation processes and the rest. Writes
bench/results/isolation-<timestamp>.json.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
from pathlib import Path
from typing import Any

import httpx

from bench import verify_setup as setup
from bench.intake import add_postgres_option, local_stack_settings, run_in_temp_dir, run_on_stack
from bench.verify import Load
from bench.verify_load import Outcome
from bench.verify_setup import Series, verdicts
from cli.stack import Stack
from core.actors import SYSTEM
from policy import cel, cost
from policy.params import Param
from services import actions
from store.db import make_engine, migrate

TARGET_SHARE, TARGET_HEALTHZ_P99_MS = 0.5, 50.0
COSTLY_RULE = "executionParams.items.all(x, executionParams.items.exists_one(y, y == x))"
ITEM_LENGTH = 64


def costliest_items() -> int:
    """The largest maxItems at which ``COSTLY_RULE`` is still publishable."""
    tree, best = cel.parse(COSTLY_RULE), 1
    while True:
        params = [Param("items", "array<string>", max_items=best + 1, max_length=ITEM_LENGTH)]
        if cost.estimate(tree, cost.declared_roots(params, [])) > cost.RULE_BUDGET:
            return best
        best += 1


def install_costly_action(settings: Any, org_id: str, max_items: int) -> str:
    engine = make_engine(settings.sqlalchemy_url)
    try:
        version = actions.install_published(
            engine,
            SYSTEM,
            org_id,
            {
                "name": "Costliest publishable rule",
                "executionParams": [
                    {
                        "name": "items",
                        "type": "array<string>",
                        "maxItems": max_items,
                        "maxLength": ITEM_LENGTH,
                    }
                ],
                "rules": [{"name": "distinct", "expression": COSTLY_RULE}],
            },
        )
        assert version is not None
        return version.action_id
    finally:
        engine.dispose()


class Party:
    """An organization's signer, mandates and prepared verify requests."""

    def __init__(
        self, stack: Stack, caller: setup.Caller, credential: dict[str, Any], execution: dict[str, Any]
    ):
        self.signer = setup.Signer(caller, f"127.0.0.1:{stack.settings.api_port}")
        self.credential, self.execution = credential, execution
        self.mandates: list[str] = []

    async def issue(self, stack: Stack, n: int) -> None:
        async with httpx.AsyncClient(base_url=f"http://{self.signer.host}", timeout=60) as http:
            self.mandates = await setup.issue_mandates(
                http, await stack.client(), self.signer, n, self.credential
            )

    async def verifications(self, load: Load, n: int) -> list[bytes]:
        out, _ = await load.run(self.signer.presentations(self.mandates, n), label=f"obtaining {n} VPs")
        vps, problems = setup.presentations_of(out.statuses, out.bodies)
        if len(vps) < n:
            raise RuntimeError(f"only {len(vps)} of {n} VPs: {dict(problems.most_common(3))}")
        return self.signer.verifications(vps, self.execution)


def healthz(host: str, n: int) -> list[bytes]:
    return [f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode()] * n


def evaluation_cpu(api_pid: int) -> float:
    """CPU of the API's evaluation processes (its children running ``policy.process``)."""
    from bench.profile import _descendants, cpu_seconds

    total = 0.0
    for pid in _descendants(api_pid):
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"policy.process" in command:
            total += cpu_seconds(pid)
    return total


async def run_bench(stack: Stack, args: argparse.Namespace, tmp: Path, load_before: float) -> dict[str, Any]:
    max_items = costliest_items()
    victim, attacker, steps = await parties(stack, args, max_items)
    load = {
        "victim": Load(stack, args.victim_clients, tmp / "victim"),
        "attacker": Load(stack, args.attacker_clients, tmp / "attacker"),
        "healthz": Load(stack, 16, tmp / "healthz"),
    }
    for each in load.values():
        each.tmp.mkdir(exist_ok=True)
    round_s = args.duration / args.rounds
    victim_n = math.ceil(round_s * args.max_rate) * args.rounds * 2
    attacker_n = math.ceil(round_s * args.attacker_max_rate) * args.rounds
    victim_reqs = await victim.verifications(load["victim"], victim_n)
    attacker_reqs = await attacker.verifications(load["attacker"], attacker_n)
    rounds = Rounds(stack, args, load, victim_reqs, attacker_reqs)
    for r in range(args.rounds * 2):
        await rounds.run(attacked=r % 2 == 1)
    return report(rounds.series, rounds.attacker_seen, rounds.pool_cpu, steps, max_items, args, load_before)


async def parties(stack: Stack, args: argparse.Namespace, max_items: int) -> tuple[Party, Party, int]:
    """The victim and the attacker (its costly action installed), each with its mandates issued;
    the estimated steps of the attacker's rule at its largest input."""
    victim_caller = setup.create_organization(stack.settings, "Isolation victim")
    attacker_caller = setup.create_organization(stack.settings, "Isolation attacker")
    action_id = install_costly_action(stack.settings, attacker_caller.organization_id, max_items)
    items = [f"{i:06d}".ljust(ITEM_LENGTH, "x") for i in range(max_items)]
    victim = Party(stack, victim_caller, setup.RENT, setup.EXECUTION_PARAMS)
    attacker = Party(
        stack,
        attacker_caller,
        {"type": "POLICY", "name": "Batch", "scope": "batch", "action": {"id": action_id, "userParams": {}}},
        {"items": items},
    )
    steps = cost.estimate(cel.parse(COSTLY_RULE), cost.value_roots({"items": items}, {}))
    print(f"attacker: maxItems {max_items}, {ITEM_LENGTH}-character items, estimate {steps:,} steps")
    await asyncio.gather(victim.issue(stack, args.mandates), attacker.issue(stack, args.mandates))
    return victim, attacker, steps


class Rounds:
    """The rounds, alternating the victim alone and the victim under attack (each with the
    ``/healthz`` prober), and what they measured."""

    def __init__(
        self,
        stack: Stack,
        args: argparse.Namespace,
        load: dict[str, Load],
        victim_reqs: list[bytes],
        attacker_reqs: list[bytes],
    ) -> None:
        self.args, self.load = args, load
        self.victim_reqs, self.attacker_reqs = victim_reqs, attacker_reqs
        self.round_s = args.duration / args.rounds
        self.host = f"127.0.0.1:{stack.settings.api_port}"
        self.api = next(c for c in stack.children if c.name == "api")
        names = ("victim alone", "victim under attack", "healthz alone", "healthz under attack", "attacker")
        self.series = {name: Series(name) for name in names}
        self.attacker_seen: dict[str, int] = {}
        self.pool_cpu, self.at_v, self.at_a = 0.0, 0, 0

    async def run(self, attacked: bool) -> None:
        """One round: the victim's share of its requests and the prober, and the attacker's share
        when ``attacked``; the evaluation processes' CPU meanwhile."""
        args, load, round_s = self.args, self.load, self.round_s
        label = "under attack" if attacked else "alone"
        per = math.ceil(round_s * args.max_rate)
        jobs = [
            load["victim"].run(
                self.victim_reqs[self.at_v : self.at_v + per], seconds=round_s, label=f"victim {label}"
            ),
            load["healthz"].run(
                healthz(self.host, math.ceil(round_s * args.healthz_rate)),
                rate=args.healthz_rate,
                label=f"healthz {label}",
            ),
        ]
        self.at_v += per
        if attacked:
            share = math.ceil(round_s * args.attacker_max_rate)
            jobs.append(
                load["attacker"].run(
                    self.attacker_reqs[self.at_a : self.at_a + share], seconds=round_s, label="attacker"
                )
            )
            self.at_a += share
        before = evaluation_cpu(self.api.proc.pid)
        results = await asyncio.gather(*jobs)
        self.pool_cpu += evaluation_cpu(self.api.proc.pid) - before
        self.record(label, per, results, attacked)

    def record(
        self, label: str, per: int, results: list[tuple[Outcome, dict[str, float]]], attacked: bool
    ) -> None:
        (v_out, v_cpu), (h_out, h_cpu) = results[0], results[1]
        self.series[f"victim {label}"].add(
            v_out,
            v_cpu,
            sum(n for k, n in verdicts(v_out.statuses, v_out.bodies).items() if k != "allow"),
            per,
        )
        self.series[f"healthz {label}"].add(h_out, h_cpu, sum(s != 200 for s in h_out.statuses.values()), -1)
        if attacked:
            a_out, a_cpu = results[2]
            self.series["attacker"].add(a_out, a_cpu, 0, -1)
            for k, n in verdicts(a_out.statuses, a_out.bodies).items():
                self.attacker_seen[k] = self.attacker_seen.get(k, 0) + n


def report(
    series: dict[str, Series],
    attacker_seen: dict[str, int],
    pool_cpu: float,
    steps: int,
    max_items: int,
    args: argparse.Namespace,
    load_before: float,
) -> dict[str, Any]:
    m = {name: s.result() for name, s in series.items()}
    print(f"\n  {'':<24}{'calls/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for r in m.values():
        print(f"  {r.name:<24}{r.rate_per_second:>9.1f}{r.p50_ms:>9.1f}{r.p99_ms:>9.1f}{r.errors:>8}")
    share = m["victim under attack"].rate_per_second / m["victim alone"].rate_per_second
    attacked = sum(n for k, n in attacker_seen.items() if k != "allow" and "rule_limit_exceeded" not in k)
    evaluated = sum(n for k, n in attacker_seen.items() if k == "allow" or "rule_limit_exceeded" in k)
    per_step_us = 1e6 * pool_cpu / max(1, evaluated * steps)
    print(f"  victim's rate under attack / alone: {share:.2f}")
    print(f"  attacker's answers: {attacker_seen}")
    print(f"  evaluation processes: {pool_cpu:.1f} s of CPU, {per_step_us:.1f} us per estimated step")
    checks = {
        f"victim keeps >= {TARGET_SHARE:g} of its rate": share >= TARGET_SHARE,
        f"/healthz p99 < {TARGET_HEALTHZ_P99_MS:g} ms under attack": m["healthz under attack"].p99_ms
        < TARGET_HEALTHZ_P99_MS,
        "every victim verification allowed": m["victim alone"].errors + m["victim under attack"].errors == 0,
    }
    for name, ok in checks.items():
        print(f"  {'meets' if ok else 'MISSES':>6}  {name}")
    cpus, load_after = os.cpu_count() or 1, os.getloadavg()[0]
    print(f"\n  {cpus} CPUs; load average {load_before:.1f} before, {load_after:.1f} after")
    return {
        "config": {**vars(args), "cpus": cpus, "load_average": [load_before, load_after]},
        "attacker": {
            "max_items": max_items,
            "estimated_steps": steps,
            "answers": attacker_seen,
            "other": attacked,
        },
        "series": {name: r.__dict__ for name, r in m.items()},
        "victim_share": share,
        "evaluation_cpu_seconds": pool_cpu,
        "us_per_step": per_step_us,
        "checks": checks,
    }


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    settings = local_stack_settings(var_dir, database_url)
    migrate(settings.sqlalchemy_url)
    stack = Stack(settings, echo=False, api_workers=1)
    return await run_on_stack(stack, "isolation", lambda before: run_bench(stack, args, var_dir, before))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.isolation",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--duration", type=float, default=12.0, help="seconds of each condition, over the rounds"
    )
    parser.add_argument("--rounds", type=int, default=3, help="rounds of each condition, alternating")
    parser.add_argument("--victim-clients", type=int, default=4, help="the victim's connections")
    parser.add_argument("--attacker-clients", type=int, default=32, help="the attacker's connections")
    parser.add_argument("--healthz-rate", type=float, default=50.0, help="GET /healthz per second")
    parser.add_argument("--max-rate", type=float, default=700.0, help="victim VPs prepared per second")
    parser.add_argument("--attacker-max-rate", type=float, default=120.0, help="attacker VPs per second")
    parser.add_argument("--mandates", type=int, default=4, help="mandates of each organization")
    db = parser.add_mutually_exclusive_group()
    db.add_argument("--database-url", default="", metavar="URL")
    add_postgres_option(db)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    run_in_temp_dir(args, main_async, args.database_url)


if __name__ == "__main__":
    main()
