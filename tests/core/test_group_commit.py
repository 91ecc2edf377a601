"""GroupCommit batches concurrent submissions and reports each batch's outcome to its callers."""

from __future__ import annotations

import asyncio
import threading

import pytest

from core.group_commit import GroupCommit


async def test_concurrent_submissions_share_one_write_and_wait_for_it() -> None:
    batches: list[list[int]] = []
    written = threading.Event()

    def write(items: list[int]) -> None:
        batches.append(list(items))
        written.set()

    gc: GroupCommit[int] = GroupCommit(write)
    await asyncio.gather(*(gc.submit(i) for i in range(20)))
    assert written.is_set()
    assert sorted(i for b in batches for i in b) == list(range(20))
    assert len(batches) == 1  # all twenty were in flight together


async def test_sequential_submissions_each_get_their_own_write() -> None:
    batches: list[list[str]] = []
    gc: GroupCommit[str] = GroupCommit(lambda items: batches.append(list(items)))
    await gc.submit("a")
    await gc.submit("b")
    assert batches == [["a"], ["b"]]


async def test_a_failed_write_fails_every_caller_of_that_batch_only() -> None:
    calls = 0

    def write(items: list[int]) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:
            raise RuntimeError("disk full")

    gc: GroupCommit[int] = GroupCommit(write)
    results = await asyncio.gather(*(gc.submit(i) for i in range(5)), return_exceptions=True)
    assert [type(r) for r in results] == [RuntimeError] * 5
    await gc.submit(99)  # the next batch writes normally
    assert calls == 2


async def test_a_cancelled_caller_does_not_strand_the_others() -> None:
    release = threading.Event()
    seen: list[list[int]] = []

    def write(items: list[int]) -> None:
        release.wait(5)
        seen.append(list(items))

    gc: GroupCommit[int] = GroupCommit(write)
    first = asyncio.create_task(gc.submit(1))
    second = asyncio.create_task(gc.submit(2))
    await asyncio.sleep(0.05)
    first.cancel()
    release.set()
    await asyncio.wait_for(second, 5)
    with pytest.raises(asyncio.CancelledError):
        await first
    assert seen == [[1, 2]]  # the write still happened for both


async def test_what_arrives_during_a_write_waits_and_is_written_next_together() -> None:
    """One write at a time: the submissions made while a batch is written wait for it, then go in
    one batch of their own; no two writes ever run at once."""
    release = threading.Event()
    batches: list[list[int]] = []
    running = 0
    overlapped = False

    def write(items: list[int]) -> None:
        nonlocal running, overlapped
        running += 1
        overlapped = overlapped or running > 1
        if not batches:
            release.wait(5)
        batches.append(list(items))
        running -= 1

    gc: GroupCommit[int] = GroupCommit(write)
    first = asyncio.create_task(gc.submit(0))
    await asyncio.sleep(0.05)  # the first batch is being written, held by ``release``
    later = [asyncio.create_task(gc.submit(i)) for i in range(1, 6)]
    await asyncio.sleep(0.05)
    assert batches == [] and not any(t.done() for t in later)
    release.set()
    await asyncio.wait_for(asyncio.gather(first, *later), 5)
    assert batches == [[0], [1, 2, 3, 4, 5]] and not overlapped


async def test_a_write_does_not_wait_behind_the_loops_busy_threads() -> None:
    """The writes have their own thread: with every thread of the loop's default executor busy
    (``asyncio.to_thread`` work, such as the decisions that feed the batches), a batch is still
    written at once."""
    release = threading.Event()
    loop = asyncio.get_running_loop()
    busy = [loop.run_in_executor(None, release.wait, 10) for _ in range(64)]
    written: list[list[int]] = []
    gc: GroupCommit[int] = GroupCommit(lambda items: written.append(list(items)))
    try:
        await asyncio.wait_for(gc.submit(7), 5)
        assert written == [[7]] and not any(f.done() for f in busy)
    finally:
        release.set()
        await asyncio.gather(*busy)
