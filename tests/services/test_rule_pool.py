"""The evaluation processes of costly rules (services.rule_pool): each organization in its turn, a
bounded wait, a process that does not answer is replaced, and what runs there is what runs inline."""

from __future__ import annotations

import asyncio
import io
import os
from collections.abc import AsyncIterator
from datetime import UTC, datetime

import pytest
import pytest_asyncio

from policy.jobs import RulesJob, decode_job, decode_run, encode_run
from policy.params import Param
from policy.process import READY, serve
from policy.rules import Rule
from services import rule_pool
from services.errors import TooMany
from services.rule_pool import RulePool

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)
ITEMS = [Param("items", "array<string>")]
QUADRATIC = Rule("distinct", "executionParams.items.all(x, executionParams.items.exists_one(y, y == x))")


def job(count: int = 3, rule: Rule = QUADRATIC, budget: int = 10_000) -> RulesJob:
    values = {"items": [f"i{n}" for n in range(count)]}
    return RulesJob("pool-test", [rule], ITEMS, [], values, {}, NOW, budget)


@pytest_asyncio.fixture
async def pool() -> AsyncIterator[RulePool]:
    made = RulePool(processes=2, waiting_per_org=3)
    yield made
    await made.close()


def test_a_job_runs_the_same_in_a_process_as_inline() -> None:
    """The process's loop (``policy.process.serve``) on a job's line answers what the job answers
    on this thread; a line that is no job is refused, and the next one still served."""
    costly = job(100)
    lines = io.BytesIO(costly.encode() + b'{"not": "a job"}\n' + job(3).encode())
    answers = io.BytesIO()
    serve(lines, answers)
    ready, first, refused, last = answers.getvalue().splitlines(keepends=True)
    assert ready == READY
    assert decode_run(first) == costly.run()
    assert decode_run(first).limit_reached
    with pytest.raises(ValueError, match="refused the job"):
        decode_run(refused)
    assert decode_run(last).evaluations[0].result == "pass"
    assert decode_job(costly.encode()) == costly
    assert encode_run(costly.run()) == first


async def test_jobs_run_in_other_processes_that_are_kept(pool: RulePool) -> None:
    first = await pool.run("org-a", job(3))
    second = await pool.run("org-a", job(100))
    assert first.evaluations[0].result == "pass"
    assert second.limit_reached and second.evaluations[0].result == "error"
    assert os.getpid() not in pool.ran_in
    assert sum(pool.ran_in.values()) == 2 and len(pool.ran_in) == 1  # one process, used twice


async def test_an_organization_never_holds_every_process(pool: RulePool) -> None:
    """Organization A sends four jobs, then B one: A holds one of the two processes and its other
    jobs wait for it in turn (a fifth is refused: three wait already); B's job starts at once in
    the other process."""
    a_jobs = [asyncio.create_task(pool.run("org-a", job(60))) for _ in range(4)]
    await asyncio.sleep(0)
    assert pool.running("org-a") == 1 and pool.waiting("org-a") == 3
    with pytest.raises(TooMany) as busy:
        await pool.run("org-a", job(60))
    assert busy.value.retry_after == 1
    b_job = asyncio.create_task(pool.run("org-b", job(3)))
    await asyncio.sleep(0)
    assert pool.running("org-b") == 1 and pool.waiting("org-b") == 0
    assert (await b_job).evaluations[0].result == "pass"
    results = await asyncio.gather(*a_jobs)
    assert [r.evaluations[0].rule for r in results] == ["distinct"] * 4
    assert sum(pool.ran_in.values()) == 5


async def test_a_process_that_does_not_answer_is_replaced(monkeypatch: pytest.MonkeyPatch) -> None:
    """The deadline is the backstop for what the meter cannot see: a job given far more steps than
    any verification may take outruns it; the process is killed, the job answered as stopped at the
    limit, and the next job runs in a new process."""
    pool = RulePool(processes=1, deadline=0.5)
    try:
        endless = await pool.run("org-a", job(2000, budget=10**12))
        assert endless.limit_reached
        assert endless.evaluations[0].reason == rule_pool.DEADLINE_REASON.format(seconds=0.5)
        assert not pool.ran_in  # it never answered
        pool.deadline = 30.0  # the new process's first job: a deadline no busy machine reaches
        after = await pool.run("org-a", job(3))
        assert after.evaluations[0].result == "pass" and len(pool.ran_in) == 1
    finally:
        await pool.close()
