"""``bench.webhook``'s decisions in instructions: what the worker process executes per decision,
from the subject's form post to the receiver's webhook, counted by valgrind's callgrind.

``python -m bench.webhook_instructions [--n 20] [--rounds 2] [--concurrency 4]`` starts the
``bench.webhook`` stack (SQLite, one API process, a receiver for the organization's webhook) with the
worker under callgrind (``bench.callgrind``), takes every request up to its decision with counting
off, makes a few decisions to warm up, then counts rounds of decisions: the round's instructions
divided by its decisions, each of which must end with its ``credential`` event received. The
worker's every thread is counted (the Temporal SDK's own included); the Temporal server's and the
API's CPU are not: ``bench.webhook`` reports those, at the mercy of the machine's load.

Under callgrind the worker runs some 50 times slower: about a second and a half per decision.
Before and after a change, run it from each tree
(``PYTHONPATH=<tree> python <checkout>/bench/webhook_instructions.py``, as ``bench.instructions``).
"""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path
from typing import Any

KIND = "decision -> webhook received (worker)"


async def _run(stack: Any, args: argparse.Namespace, caller: Any, receiver: Any) -> dict[str, Any]:
    import httpx

    from bench import verify_setup as setup
    from bench.callgrind import instructions, keep_dumps
    from bench.measure import Phase
    from bench.verify_instructions import report
    from bench.webhook import Decisions, open_journeys

    c, n = args.concurrency, args.n
    signer = setup.Signer(caller, f"127.0.0.1:{stack.settings.api_port}")
    async with httpx.AsyncClient(base_url=f"http://{signer.host}", timeout=120) as http:
        journeys = await open_journeys(http, signer, args.warmup + n * args.rounds)
        decisions = Decisions(http, receiver, journeys)
        phase = Phase(KIND, decisions)
        await phase.run(args.warmup, c, stack, "warm-up: decision", count=False)
        counts: dict[str, list[float]] = {KIND: []}
        for r in range(args.rounds):
            label = f"round {r + 1}: decision"
            total, _ = await instructions(stack, f"decision-{r}", partial(phase.run, n, c, stack, label))
            if phase.errors or decisions.failures:
                raise RuntimeError(f"{label}: {phase.errors} failed: {decisions.failures[:2]}")
            counts[KIND].append(total / n)
    for line in report(counts):
        print(line)
    if args.keep_dumps:
        keep_dumps(stack, args.keep_dumps)
    return {"instructions_per_decision": counts[KIND], "n": n, "rounds": args.rounds, "concurrency": c}


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    from bench.callgrind import CountedStack
    from bench.webhook import on_hooked_stack

    return await on_hooked_stack(
        "webhook-instructions",
        var_dir,
        database_url,
        1,
        lambda stack, caller, receiver, _: _run(stack, args, caller, receiver),
        lambda settings: CountedStack(
            settings, echo=False, counted="worker", callgrind_out=var_dir / "callgrind.out"
        ),
    )


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.webhook_instructions",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--n", type=int, default=20, help="decisions per round")
    parser.add_argument("--rounds", type=int, default=2, help="rounds counted")
    parser.add_argument("--warmup", type=int, default=4, help="decisions before counting")
    parser.add_argument("--concurrency", type=int, default=4, help="decisions in flight")
    parser.add_argument("--keep-dumps", type=Path, metavar="DIR", help="copy callgrind's dumps into DIR")
    args = parser.parse_args(argv)
    if min(args.n, args.rounds, args.warmup, args.concurrency) < 1:
        parser.error("every count must be at least 1")
    return args


def main(argv: list[str] | None = None) -> None:
    from bench import callgrind

    callgrind.run(parse_args(argv), main_async, "bench.webhook_instructions")


if __name__ == "__main__":
    if __package__ in (None, ""):  # bench/ is first on the path: file_mode sets the rest up
        from file_mode import run_as_file

        run_as_file(__file__)
    main()
