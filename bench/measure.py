"""Measuring one kind of operation: rate, latency percentiles and the CPU of each process."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from bench.profile import cpu_seconds, own_cpu_seconds
from cli.stack import Stack

TARGET_RATIO = 0.5


@dataclass
class Measurement:
    name: str
    count: int
    seconds: float
    rate_per_second: float
    p50_ms: float
    p99_ms: float
    errors: int
    cpu_ms_per_op: dict[str, float]  # CPU of each process during the phase, per operation


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def cpu_snapshot(stack: Stack) -> dict[str, float]:
    snapshot = {c.name: cpu_seconds(c.proc.pid) for c in stack.children}
    return {**snapshot, "bench client": own_cpu_seconds()}


@dataclass
class Phase:
    """One kind of operation, measured over several rounds (alternating with the other kind, so
    that a change in the machine's load during the run hits both alike).

    ``op(i)`` answers whether it succeeded, and its latency is the time until it answers; or it
    answers a float, its own latency in seconds: for an operation whose end is seen elsewhere (a
    webhook arriving at a receiver) while the call that began it goes on for a while."""

    name: str
    op: Callable[[int], Awaitable[bool | float]]
    latencies: list[float] = field(default_factory=list)
    seconds: float = 0.0
    errors: int = 0
    next_index: int = 0
    cpu: dict[str, float] = field(default_factory=dict)

    async def run(self, n: int, concurrency: int, stack: Stack, label: str, count: bool = True) -> None:
        """``n`` more operations with ``concurrency`` in flight, showing progress."""
        done = 0
        last = self.next_index + n
        live = sys.stdout.isatty()  # redraw one line on a terminal, one line per round in a log
        lead = "\r" if live else ""

        async def runner() -> None:
            nonlocal done
            while self.next_index < last:
                i = self.next_index
                self.next_index += 1
                began = time.perf_counter()
                outcome = await self.op(i)
                if count:
                    own = isinstance(outcome, float)
                    self.latencies.append(outcome if own else time.perf_counter() - began)
                    self.errors += 0 if own or outcome else 1
                done += 1
                if live and done % max(1, n // 20) == 0:
                    print(f"{lead}  {label:<34} {done:>4}/{n}", end="", flush=True)

        cpu_before = cpu_snapshot(stack)
        began = time.perf_counter()
        await asyncio.gather(*(runner() for _ in range(concurrency)))
        seconds = time.perf_counter() - began
        print(f"{lead}  {label:<34} {n:>4}/{n} in {seconds:4.1f}s  ({n / seconds:6.1f}/s)", flush=True)
        if count:
            self.seconds += seconds
            for name, value in cpu_snapshot(stack).items():
                self.cpu[name] = self.cpu.get(name, 0.0) + value - cpu_before[name]

    def result(self) -> Measurement:
        n, ordered = len(self.latencies), sorted(self.latencies)
        return Measurement(
            self.name,
            n,
            round(self.seconds, 3),
            n / self.seconds,
            percentile(ordered, 0.5) * 1000,
            percentile(ordered, 0.99) * 1000,
            self.errors,
            {k: round(1000 * v / n, 2) for k, v in self.cpu.items()},
        )


def report(bare: Measurement, intake: Measurement, ratio: float) -> None:
    print(f"\n  {'':<30}{'ops/s':>9}{'p50 ms':>9}{'p99 ms':>9}{'errors':>8}")
    for m in (bare, intake):
        print(f"  {m.name:<30}{m.rate_per_second:>9.1f}{m.p50_ms:>9.1f}{m.p99_ms:>9.1f}{m.errors:>8}")
    verdict = "meets" if ratio >= TARGET_RATIO else "BELOW"
    print(f"  {'ratio POST / start':<30}{ratio:>9.2f}   {verdict} the target {TARGET_RATIO}")
    names = list(intake.cpu_ms_per_op)
    print(f"\n  CPU ms per operation{'':<10}{''.join(f'{k:>14}' for k in names)}")
    for m in (bare, intake):
        print(f"  {m.name:<30}{''.join(f'{m.cpu_ms_per_op.get(k, 0):>14.2f}' for k in names)}")
