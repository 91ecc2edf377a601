"""Evaluation processes for the rules too costly to run on the API's event loop (issue 30).

A verification whose rules may take more than ``policy.cost.INLINE_STEPS`` steps on the values it
sends is evaluated in one of a few ``python -m policy.process`` processes, started on first use and
again when one ends. Each runs at a lower CPU priority than the API, so a burst of costly rules
slows other costly rules, never the API's answers or the ordinary verifications it evaluates inline.

- **Bounded.** A job stops at its step budget (``policy.meter``, counted by CEL itself): a tenth of a
  second of CPU here. A process that has not answered after ``deadline`` seconds is killed, a new
  one started, and the job answered as stopped at the limit: a backstop for what the meter cannot
  see (a bug, a slow call inside one step), far above what a budget takes even on a machine so
  busy that the processes' lower priority gives them a few per cent of a core.
- **Fair.** Waiting jobs queue per organization and are taken in turn, one organization after the
  other; an organization holds at most ``processes - 1`` processes at once (one when there is only
  one), so another organization's job never waits behind a whole pool of it. At most
  ``waiting_per_org`` of an organization's jobs wait; beyond that ``TooMany`` (429, retry after a
  second), and nothing of the verification is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections import Counter, deque
from dataclasses import dataclass, field

from policy.jobs import RulesJob, decode_run
from policy.process import READY
from policy.rules import Evaluation, RulesRun
from services.errors import TooMany, Unavailable

log = logging.getLogger("mandatum.services.rule_pool")
COMMAND = (sys.executable, "-m", "policy.process")
STARTUP_SECONDS = 120.0
LINE_LIMIT = 64 * 1024 * 1024  # one answer line (a job is at most the 1 MiB request body)
UNAVAILABLE = "Rule evaluation is not available right now: try again"
BUSY = "Too many of your organization's verifications are waiting for their rules: retry in a second"
DEADLINE_REASON = "stopped: its evaluation process did not answer within {seconds:g} s"


class _ProcessGone(Exception):
    """The evaluation process ended, or answered something that is not a run."""


@dataclass
class _Task:
    org: str
    job: RulesJob
    done: asyncio.Future[RulesRun]


class _Process:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.pid = process.pid

    @classmethod
    async def start(cls) -> _Process:
        """A new process, once it has said it is ready (its imports take a second or more on a busy
        machine: not counted against a job's deadline)."""
        process = await asyncio.create_subprocess_exec(
            *COMMAND, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, limit=LINE_LIMIT
        )
        started = cls(process)
        assert process.stdout is not None
        try:
            ready = await asyncio.wait_for(process.stdout.readline(), STARTUP_SECONDS)
        except TimeoutError:
            ready = b""
        if ready != READY:
            await started.stop()
            raise _ProcessGone(f"the evaluation process did not start ({ready[:80]!r})")
        return started

    async def run(self, job: RulesJob) -> RulesRun:
        stdin, stdout = self.process.stdin, self.process.stdout
        assert stdin is not None and stdout is not None
        try:
            stdin.write(job.encode())
            await stdin.drain()
            line = await stdout.readline()
            return decode_run(line)
        except (OSError, ValueError, KeyError, TypeError, asyncio.LimitOverrunError) as exc:
            raise _ProcessGone(type(exc).__name__) from exc

    async def stop(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.process.kill()
        await self.process.wait()


@dataclass
class RulePool:
    """The evaluation processes of one API process."""

    processes: int = 2
    waiting_per_org: int = 32
    deadline: float = 30.0
    ran_in: Counter[int] = field(default_factory=Counter)  # jobs answered, by process id
    _waiting: dict[str, deque[_Task]] = field(default_factory=dict)
    _ring: deque[str] = field(default_factory=deque)  # organizations with waiting jobs, next first
    _running: Counter[str] = field(default_factory=Counter)
    _idle: list[_Process] = field(default_factory=list)
    _busy: int = 0
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    @property
    def share(self) -> int:
        """The most processes one organization's jobs hold at once."""
        return max(1, self.processes - 1)

    async def run(self, org: str, job: RulesJob) -> RulesRun:
        """The run of ``job`` for organization ``org``, in its turn."""
        queue = self._waiting.setdefault(org, deque())
        if len(queue) >= self.waiting_per_org:
            raise TooMany(BUSY, retry_after=1)
        task = _Task(org, job, asyncio.get_running_loop().create_future())
        queue.append(task)
        if org not in self._ring:
            self._ring.append(org)
        self._dispatch()
        # a caller that goes away (its client hung up) leaves the job to finish in its turn
        return await asyncio.shield(task.done)

    def waiting(self, org: str) -> int:
        """How many of the organization's jobs wait for a process."""
        return len(self._waiting.get(org, ()))

    def running(self, org: str) -> int:
        """How many processes run the organization's jobs."""
        return self._running[org]

    def _dispatch(self) -> None:
        while self._busy < self.processes:
            task = self._next_task()
            if task is None:
                return
            self._running[task.org] += 1
            self._busy += 1
            running = asyncio.get_running_loop().create_task(self._execute(task))
            self._tasks.add(running)
            running.add_done_callback(self._tasks.discard)

    def _next_task(self) -> _Task | None:
        for _ in range(len(self._ring)):
            org = self._ring[0]
            self._ring.rotate(-1)  # whatever happens, the next organization is next
            if self._running[org] >= self.share:
                continue
            queue = self._waiting[org]
            task = queue.popleft()
            if not queue:
                self._ring.pop()  # it went to the end just now
                del self._waiting[org]
            return task
        return None

    async def _execute(self, task: _Task) -> None:
        process: _Process | None = None
        try:
            process = self._idle.pop() if self._idle else await _Process.start()
            run = await self._run_on(process, task.job)
            if run is None:
                await process.stop()
                process = None
                run = _stopped(task.job, DEADLINE_REASON.format(seconds=self.deadline))
            else:
                self.ran_in[process.pid] += 1
            if not task.done.done():
                task.done.set_result(run)
        except (OSError, _ProcessGone) as exc:
            log.error("rule evaluation process failed: %s", exc)
            if process is not None:
                await process.stop()
                process = None
            if not task.done.done():
                task.done.set_exception(Unavailable(UNAVAILABLE, retry_after=1))
        except asyncio.CancelledError:  # the pool is closing: the process goes with it
            if process is not None:
                await process.stop()
                process = None
            if not task.done.done():
                task.done.set_exception(Unavailable(UNAVAILABLE, retry_after=1))
            raise
        finally:
            if process is not None:
                self._idle.append(process)
            self._running[task.org] -= 1
            self._busy -= 1
            self._dispatch()

    async def _run_on(self, process: _Process, job: RulesJob) -> RulesRun | None:
        """The process's answer, or None when it took longer than the deadline."""
        try:
            return await asyncio.wait_for(process.run(job), self.deadline)
        except TimeoutError:
            log.warning(
                "rule evaluation process %s did not answer within %s s: stopped", process.pid, self.deadline
            )
            return None

    async def close(self) -> None:
        """Stop every process (the API's shutdown); jobs still running are refused (503)."""
        running = list(self._tasks)
        for task in running:
            task.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        idle, self._idle = self._idle, []
        for process in idle:
            await process.stop()


def _stopped(job: RulesJob, reason: str) -> RulesRun:
    evaluations = [
        Evaluation(rule=r.name, expression=r.expression, result="error", reason=reason) for r in job.rules
    ]
    return RulesRun(evaluations, job.budget, limit_reached=True)
