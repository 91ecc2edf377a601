"""``bench.verify``'s ratio in instructions: what the API process executes per signed ``GET /me``
and per ``POST /credential/verify``, counted by valgrind's callgrind on the running API.

``python -m bench.verify_instructions [--n 150] [--rounds 2] [--concurrency 4]`` starts the
``bench.verify`` stack (SQLite, one API process) with the API under
``valgrind --tool=callgrind --instr-atstart=no``, obtains its VPs and signs its requests with the
instrumentation off, warms both kinds of call up, then counts each kind in alternating rounds:
``callgrind_control --zero`` and ``--instr=on`` before a round, ``--instr=off`` and ``--dump`` after
it, the dump's total divided by the round's calls. Every thread of the API is counted (the
group-commit writer's included); the wall clock is not, so two trees compared this way are
compared whatever the machine's load, where ``bench.verify``'s rates move by a third between runs.

Under callgrind the API runs some 50 times slower, so the rounds are small and the latencies
mean nothing. Before and after a change, run it from each tree
(``PYTHONPATH=<tree> python <checkout>/bench/verify_instructions.py``, as ``bench.instructions``).
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOTALS = re.compile(r"^totals:\s+(\d+)\s*$", re.MULTILINE)
KINDS = ("GET /me (signed)", "POST /credential/verify")


def callgrind_prefix(out: Path) -> list[str]:
    """The command before the API's: callgrind, counting nothing until told to."""
    return ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]


def dumped_total(out: Path, label: str) -> int:
    """The instructions in the dump ``callgrind_control --dump=<label>`` wrote beside ``out``."""
    for path in sorted(out.parent.glob(f"{out.name}.*")):
        text = path.read_text(errors="replace")
        if f"\ndesc: Trigger: dump {label}\n" in text:
            found = TOTALS.search(text)
            if found is None:
                raise RuntimeError(f"{path} holds no totals line")
            return int(found.group(1))
    raise RuntimeError(f"no callgrind dump labelled {label!r} beside {out}")


def control(pid: int, *options: str) -> None:
    subprocess.run(["callgrind_control", *options, str(pid)], check=True, capture_output=True, timeout=120)


def report(counts: dict[str, list[float]]) -> list[str]:
    """Per kind its rounds' instructions per call and their mean; the ratio GET /me / verify (the
    throughput ratio ``bench.verify`` reports, if the CPU were all there is)."""
    lines = []
    for kind in KINDS:
        rounds = counts[kind]
        each = ", ".join(f"{c / 1e6:.3f}" for c in rounds)
        lines.append(f"  {kind:<26} {sum(rounds) / len(rounds) / 1e6:7.3f} M per call (rounds: {each})")
    me, verify = (sum(counts[k]) / len(counts[k]) for k in KINDS)
    lines.append(f"  ratio GET /me / verify     {me / verify:7.3f}")
    return lines


async def _counted(stack: Any, load: Any, requests: list[bytes], label: str, tag: str) -> float:
    """Instructions per call of one round of ``requests``; every call must be answered 200 (a
    verification: allowed)."""
    from bench.verify_setup import not_allowed

    pid = next(c.proc.pid for c in stack.children if c.name == "api")
    await asyncio.to_thread(control, pid, "--zero")
    await asyncio.to_thread(control, pid, "--instr=on")
    out, _ = await load.run(requests, label=label)
    await asyncio.to_thread(control, pid, "--instr=off")
    await asyncio.to_thread(control, pid, f"--dump={tag}")
    failed = not_allowed(out)[0] if "verify" in label else sum(s != 200 for s in out.statuses.values())
    if failed or len(out.statuses) != len(requests):
        raise RuntimeError(f"{label}: {failed} of {len(requests)} calls failed or were not allowed")
    return await asyncio.to_thread(dumped_total, stack.callgrind_out, tag) / len(requests)


async def _run(stack: Any, args: argparse.Namespace, caller: Any, tmp: Path) -> dict[str, Any]:
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
        counts[KINDS[0]].append(await _counted(stack, load, me, f"round {r + 1}: GET /me", f"me-{r}"))
        counts[KINDS[1]].append(
            await _counted(stack, load, slices[r], f"round {r + 1}: verify", f"verify-{r}")
        )
    for line in report(counts):
        print(line)
    if args.keep_dumps:  # for callgrind_annotate: which C functions the instructions ran in
        args.keep_dumps.mkdir(parents=True, exist_ok=True)
        for path in stack.callgrind_out.parent.glob(f"{stack.callgrind_out.name}.*"):
            shutil.copy(path, args.keep_dumps / path.name)
    return {"instructions_per_call": counts, "n": n, "rounds": args.rounds, "concurrency": args.concurrency}


async def main_async(args: argparse.Namespace, var_dir: Path, database_url: str) -> int:
    from bench import verify_setup as setup
    from bench.intake import local_stack_settings, run_on_stack
    from cli.stack import Child, Stack
    from store.db import migrate

    @dataclass
    class CountedStack(Stack):
        """The benchmark's stack with its API under callgrind."""

        callgrind_out: Path = field(default=var_dir / "callgrind.out")

        async def _spawn(self, name: str, cmd: list[str], echo: bool) -> Child:
            return await super()._spawn(
                name, [*callgrind_prefix(self.callgrind_out), *cmd] if name == "api" else cmd, echo
            )

    settings = local_stack_settings(var_dir, database_url)
    migrate(settings.sqlalchemy_url)
    caller = setup.create_organization(settings)
    stack = CountedStack(settings, echo=False)
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
    args = parse_args(argv)
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("bench.verify_instructions needs valgrind (Debian's valgrind package)")
    from bench.intake import run_in_temp_dir

    args.postgres = None  # SQLite in the temp dir, as bench.verify's default
    run_in_temp_dir(args, main_async, "")


if __name__ == "__main__":
    if __package__ in (None, ""):  # run as a file: the tree's root last, after PYTHONPATH's
        sys.path.pop(0)
        sys.path.append(str(Path(__file__).resolve().parents[1]))
    main()
