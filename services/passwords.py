"""Argon2id password hashes (``argon2-cffi``'s defaults: 64 MiB, 3 passes, 4 lanes), never on the
event loop (issue 30, item 2).

Each hash takes tens of milliseconds of CPU and 64 MiB, so they run on threads of their own
(``core.bounded.BoundedPool``): argon2-cffi releases the GIL while it hashes, so the loop keeps
answering. At most ``HASH_WORKERS`` run at once (the memory of 30 concurrent logins is 2 x 64 MiB,
not 30 x 64 MiB) and ``HASH_WAITING`` more wait; beyond that the caller is told to come back
(``Busy``, 503 with ``Retry-After``) instead of queueing without end. The pool is per process, like
the API's other pools; the login throttle (``services.logins``) keeps any one client's share small.

A check for an address no member has runs against a stand-in hash of the same parameters, so it
costs what a real one costs."""

from __future__ import annotations

from functools import cache

from argon2 import PasswordHasher, profiles
from argon2.exceptions import InvalidHashError, VerificationError

from core.bounded import BoundedPool, PoolFull
from services.errors import Unavailable

HASH_WORKERS = 2
HASH_WAITING = 30
BUSY_RETRY_SECONDS = 5
PARAMETERS = profiles.RFC_9106_LOW_MEMORY  # argon2-cffi's default: Argon2id, 64 MiB, 3 passes, 4 lanes
_HASHER = PasswordHasher.from_parameters(PARAMETERS)
HASHING = BoundedPool("argon2", HASH_WORKERS, HASH_WAITING)


class Busy(Unavailable):
    """Every hashing thread is busy and enough wait already (503)."""


def _busy() -> Busy:
    return Busy("The dashboard is busy: try again in a few seconds", retry_after=BUSY_RETRY_SECONDS)


@cache
def _stand_in() -> str:
    """The hash checked for an address no member has (made once, on a hashing thread)."""
    return _HASHER.hash("a password no member has, hashed once")


def _matches(stored: str | None, password: str) -> bool:
    try:
        return _HASHER.verify(stored or _stand_in(), password) and stored is not None
    except (VerificationError, InvalidHashError):
        return False


async def matches(stored: str | None, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` hashes; for None (no such member, no password
    yet) False, after the same work. ``Busy`` when the hashing threads are full."""
    try:
        return await HASHING.run(_matches, stored, password)
    except PoolFull as exc:
        raise _busy() from exc


async def hashed(password: str) -> str:
    """The Argon2id hash to store; ``Busy`` when the hashing threads are full."""
    try:
        return await HASHING.run(_HASHER.hash, password)
    except PoolFull as exc:
        raise _busy() from exc
