"""``bench.verify``'s ratio in instructions: what the API process executes per signed ``GET /me``
and per ``POST /credential/verify``, counted by valgrind's callgrind on the running API.

``python -m bench.verify_instructions [--n 150] [--rounds 2] [--concurrency 4]`` starts the
``bench.verify`` stack (SQLite, one API process) with the API under callgrind (``bench.callgrind``),
obtains its VPs and signs its requests with counting off, warms both kinds of call up, then counts
each kind in alternating rounds: the round's instructions divided by its calls. Every thread of the
API is counted (the group-commit writer's included); the wall clock is not, so two trees compared
this way are compared whatever the machine's load, where ``bench.verify``'s rates move by a third
between runs.

Under callgrind the API runs some 50 times slower, so the rounds are small and the latencies
mean nothing. Before and after a change, run it from each tree
(``PYTHONPATH=<tree> python <checkout>/bench/verify_instructions.py``, as ``bench.instructions``).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

KINDS = ("GET /me (signed)", "POST /credential/verify")


def report(counts: dict[str, list[float]]) -> list[str]:
    """Per kind its rounds' instructions per call and their mean; for GET /me and verify, the
    ratio of the two (the throughput ratio ``bench.verify`` reports, if the CPU were all there is)."""
    lines = []
    for kind, rounds in counts.items():
        each = ", ".join(f"{c / 1e6:.3f}" for c in rounds)
        lines.append(f"  {kind:<26} {sum(rounds) / len(rounds) / 1e6:7.3f} M per call (rounds: {each})")
    if tuple(counts) == KINDS:
        me, verify = (sum(counts[k]) / len(counts[k]) for k in KINDS)
        lines.append(f"  ratio GET /me / verify     {me / verify:7.3f}")
    return lines


async def _counted(
    stack: Any, load: Any, requests: list[bytes], label: str, tag: str, verifications: bool
) -> float:
    """Instructions per call of one round of ``requests``; every call must be answered 200, and
    ``verifications`` allowed."""
    from bench.callgrind import instructions
    from bench.verify_setup import not_allowed

    total, (out, _) = await instructions(stack, tag, lambda: load.run(requests, label=label))
    failed = not_allowed(out)[0] if verifications else sum(s != 200 for s in out.statuses.values())
    if failed or len(out.statuses) != len(requests):
        raise RuntimeError(f"{label}: {failed} of {len(requests)} calls failed or were not allowed")
    return total / len(requests)


async def _run(stack: Any, args: argparse.Namespace, caller: Any, tmp: Path) -> dict[str, Any]:
    from bench.callgrind import keep_dumps
    from bench.verify import Load, prepare

    load = Load(stack, args.concurrency, tmp)
    n, warm = args.n, args.warmup
    signer, [warm_vps, *slices], _ = await prepare(stack, load, caller, args, [warm] + [n] * args.rounds)
    me_all = signer.me(warm + n * args.rounds)
    await load.run(me_all[:warm], label="warm-up: GET /me")
    await load.run(warm_vps, label="warm-up: verify")
    counts: dict[str, list[float]] = {kind: [] for kind in KINDS}
    for r in range(args.rounds):
        me = me_all[warm + r * n :][:n]
        counts[KINDS[0]].append(await _counted(stack, load, me, f"round {r + 1}: GET /me", f"me-{r}", False))
        counts[KINDS[1]].append(
            await _counted(stack, load, slices[r], f"round {r + 1}: verify", f"verify-{r}", True)
        )
    for line in report(counts):
        print(line)
    if args.keep_dumps:
        keep_dumps(stack, args.keep_dumps)
    return {"instructions_per_call": counts, "n": n, "rounds": args.rounds, "concurrency": args.concurrency}


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    from bench import verify_setup as setup
    from bench.callgrind import CountedStack
    from bench.intake import local_stack_settings, run_on_stack
    from store.db import migrate

    settings = local_stack_settings(var_dir, database_url)
    migrate(settings.sqlalchemy_url)
    caller = setup.create_organization(settings)
    stack = CountedStack(settings, echo=False, counted="api", callgrind_out=var_dir / "callgrind.out")
    return await run_on_stack(stack, "verify-instructions", lambda _: _run(stack, args, caller, var_dir))


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.verify_instructions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=150, help="calls of each kind per round")
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds of each kind")
    parser.add_argument("--warmup", type=int, default=30, help="calls of each kind before counting")
    parser.add_argument("--concurrency", type=int, default=4, help="clients (connections)")
    parser.add_argument("--mandates", type=int, default=8, help="mandates the VPs are spread over")
    parser.add_argument("--keep-dumps", type=Path, metavar="DIR", help="copy callgrind's dumps into DIR")
    args = parser.parse_args(argv)
    if min(args.n, args.rounds, args.warmup, args.concurrency, args.mandates) < 1:
        parser.error("every count must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    from bench import callgrind

    callgrind.run(parse_args(argv), main_async, "bench.verify_instructions")


if __name__ == "__main__":
    if __package__ in (None, ""):  # bench/ is first on the path: file_mode sets the rest up
        from file_mode import run_as_file

        run_as_file(__file__)
    main()
