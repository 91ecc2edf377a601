"""services.passwords and core.bounded: Argon2id on threads of its own, at most two hashes at once
(30 logins at once hold 2 x 64 MiB, not 30 x), a bounded queue beyond which a caller is refused at
once, and a place held until the work ends even when its caller stopped waiting."""

from __future__ import annotations

import asyncio
import threading

import pytest
from argon2 import PasswordHasher

from core.bounded import BoundedPool, PoolFull
from services import passwords

PASSWORD = "correct horse battery staple"


async def test_thirty_checks_at_once_run_two_at_a_time_on_the_hashing_threads(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    running, most, names = 0, 0, set()
    lock = threading.Lock()
    real = PasswordHasher.verify

    def verify(self: PasswordHasher, stored: str, password: str) -> bool:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
            names.add(threading.current_thread().name)
        try:
            return real(self, stored, password)
        finally:
            with lock:
                running -= 1

    stored = await passwords.hashed(PASSWORD)
    monkeypatch.setattr(PasswordHasher, "verify", verify)
    checks = [passwords.matches(stored if i % 2 else None, PASSWORD) for i in range(30)]
    assert await asyncio.gather(*checks) == [i % 2 == 1 for i in range(30)]  # None: False, same work
    assert 1 <= most <= passwords.HASH_WORKERS == 2
    assert names and all(n.startswith("argon2") for n in names)
    assert threading.current_thread().name not in names


async def test_a_full_pool_refuses_at_once_and_a_place_is_held_until_its_work_ends() -> None:
    pool = BoundedPool("held", workers=1, waiting=1)
    release = threading.Event()
    running = asyncio.create_task(pool.run(release.wait, 30))
    waiting = asyncio.create_task(pool.run(lambda: "second"))
    await asyncio.sleep(0)  # both have taken their places
    with pytest.raises(PoolFull):
        await pool.run(lambda: "third")
    running.cancel()  # its caller gives up; the work has started and keeps its place
    with pytest.raises(asyncio.CancelledError):
        await running
    with pytest.raises(PoolFull):
        await pool.run(lambda: "third")
    release.set()
    assert await waiting == "second"
    assert await pool.run(lambda: "third") == "third"


async def test_a_waiting_call_whose_caller_gives_up_frees_its_place() -> None:
    pool = BoundedPool("given-up", workers=1, waiting=1)
    release = threading.Event()
    running = asyncio.create_task(pool.run(release.wait, 30))
    given_up = asyncio.create_task(pool.run(lambda: "never"))
    await asyncio.sleep(0)
    given_up.cancel()  # not started: cancelled with its caller, its place free again
    with pytest.raises(asyncio.CancelledError):
        await given_up
    admitted = asyncio.create_task(pool.run(lambda: "admitted"))
    release.set()
    assert (await running, await admitted) == (True, "admitted")


async def test_busy_hashing_is_a_503_kind_of_refusal_with_a_retry(monkeypatch: pytest.MonkeyPatch) -> None:
    full = BoundedPool("argon2-full", workers=1, waiting=0)
    release = threading.Event()
    holding = asyncio.create_task(full.run(release.wait, 30))
    await asyncio.sleep(0)
    monkeypatch.setattr(passwords, "HASHING", full)
    with pytest.raises(passwords.Busy) as busy:
        await passwords.matches(None, PASSWORD)
    assert busy.value.retry_after == passwords.BUSY_RETRY_SECONDS
    with pytest.raises(passwords.Busy):
        await passwords.hashed(PASSWORD)
    release.set()
    assert await holding is True


def test_the_service_hashes_with_argon2id_at_rfc_9106s_low_memory_parameters() -> None:
    """The suite hashes at the cheapest parameters (tests/conftest.py); the service's own are
    Argon2id, 64 MiB, 3 passes, 4 lanes (RFC 9106's second recommended option)."""
    assert passwords.PARAMETERS.memory_cost == 65536 and passwords.PARAMETERS.time_cost == 3
    stored = PasswordHasher.from_parameters(passwords.PARAMETERS).hash(PASSWORD)
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=4$")
    assert passwords._matches(stored, PASSWORD) and not passwords._matches(stored, PASSWORD + "!")
