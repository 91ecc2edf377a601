"""Counting the instructions one process of a benchmark's stack executes, with valgrind's callgrind:
the same count for the same work however loaded the machine is (``bench.verify_instructions``,
``bench.webhook_instructions``).

The process runs under ``valgrind --tool=callgrind --instr-atstart=no`` (``counted``), some 50
times slower once counting and about five times slower until then; ``instructions`` zeroes its
counters and switches counting on around a piece of work (``callgrind_control``), then asks for a
dump and reads its total. Every thread of the process is counted; the kernel's work is not.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import shutil
import subprocess
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.intake import BenchMain, run_in_temp_dir
from cli.stack import Child, Stack

TOTALS = re.compile(r"^totals:\s+(\d+)\s*$", re.MULTILINE)


def run(args: argparse.Namespace, bench_main: BenchMain, name: str) -> None:
    """``bench_main(args, temp dir, "")``: the benchmark on SQLite in a temporary directory, or an
    exit naming what is missing."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit(f"{name} needs valgrind (Debian's valgrind package)")
    args.postgres = None  # SQLite in the temp dir, as the wall-clock benchmarks' default
    run_in_temp_dir(args, bench_main, "")


def callgrind_prefix(out: Path) -> list[str]:
    """The command before the process's: callgrind, counting nothing until told to."""
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


@dataclass
class CountedStack(Stack):
    """A benchmark's stack with one of its processes (``counted``: "api" or "worker") under
    callgrind, its dumps at ``callgrind_out``.*."""

    counted: str = "api"
    callgrind_out: Path = field(default=Path("callgrind.out"))

    async def _spawn(self, name: str, cmd: list[str], echo: bool) -> Child:
        wrapped = [*callgrind_prefix(self.callgrind_out), *cmd] if name == self.counted else cmd
        return await super()._spawn(name, wrapped, echo)


async def instructions(stack: CountedStack, tag: str, work: Callable[[], Awaitable[Any]]) -> tuple[int, Any]:
    """The counted process's instructions while ``work()`` runs, and what it returned."""
    pid = next(c.proc.pid for c in stack.children if c.name == stack.counted)
    await asyncio.to_thread(control, pid, "--zero")
    await asyncio.to_thread(control, pid, "--instr=on")
    try:
        done = await work()
    finally:
        await asyncio.to_thread(control, pid, "--instr=off")
    await asyncio.to_thread(control, pid, f"--dump={tag}")
    return await asyncio.to_thread(dumped_total, stack.callgrind_out, tag), done


def keep_dumps(stack: CountedStack, into: Path) -> None:
    """Copies of the dumps, for ``callgrind_annotate`` (which C functions the instructions ran in)."""
    into.mkdir(parents=True, exist_ok=True)
    for path in stack.callgrind_out.parent.glob(f"{stack.callgrind_out.name}.*"):
        shutil.copy(path, into / path.name)
