"""How attempts at a member's password or second factor are counted (issue 30, items 3, 6 and 7;
docs/adr/0004): the one throttle of the login (``services.logins``) and of every change to a
second factor (``services.second_factor``), so that a guess costs the same wherever it is made.

- **Who is counted.** Every attempt counts against two keys (``store.throttle``): the e-mail
  address with the client's address, and the client's address alone. The first locks after
  ``login_failures_before_lock`` failures, the second after ``login_failures_per_client``; from
  there every failure locks the key for 1 minute, then 2, 4 ... at most 60. One failure is forgiven
  per hour without one, all after a day.
- **Counted first.** An attempt is counted, atomically, before anything is checked, and gives its
  count back when it was right (or never checked).
- **The address** is counted by its keyed hash (HMAC-SHA256 under a sub-key of the master key),
  never in clear. **The client** is its IPv4 address or its IPv6 /64 network.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import math
import re
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from services.context import Context
from services.errors import TooMany
from store import throttle

BACKOFF = throttle.Backoff(
    first_lock=timedelta(minutes=1),
    max_lock=timedelta(minutes=60),
    forgive_every=timedelta(hours=1),
    forget_after=timedelta(hours=24),
)
UNKNOWN_CLIENT = "unknown"
_NAME_RE = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def client_key(host: str | None) -> str:
    """What a client is counted as: its IPv4 address, its IPv6 /64 network (an IPv4 address
    carried in IPv6 as that address), or, for a peer of another kind, a short safe name."""
    try:
        ip = ipaddress.ip_address(host or "")
    except ValueError:
        return host if host and _NAME_RE.fullmatch(host) else UNKNOWN_CLIENT
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.IPv6Network((ip, 64), strict=False))
    return str(ip)


@lru_cache(maxsize=4)
def _address_secret(master_key: bytes) -> bytes:
    info = b"mandatum login throttle v1"
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=info).derive(master_key)


def address_key(ctx: Context, address: str) -> str:
    """The keyed hash an e-mail address is counted under (never the address itself)."""
    secret = _address_secret(ctx.settings.master_key_bytes())
    return hmac.new(secret, address.encode("utf-8"), hashlib.sha256).hexdigest()


@dataclass(frozen=True)
class Attempt:
    """One attempt, counted: ``give_back`` when it was no failure."""

    ctx: Context
    limits: list[throttle.Limit]

    def give_back(self) -> None:
        throttle.give_back(self.ctx.engine, [limit.key for limit in self.limits])


def count(ctx: Context, address: str, client: str | None, now: datetime) -> Attempt:
    """Count an attempt at ``address``'s password or code from ``client`` before anything is
    checked, or ``TooMany`` (the same words for everyone) while one of its keys is locked."""
    key, where = address_key(ctx, address), client_key(client)
    limits = [
        throttle.Limit(f"login:{key}:{where}", ctx.settings.login_failures_before_lock, address=key),
        throttle.Limit(f"client:{where}", ctx.settings.login_failures_per_client),
    ]
    until = throttle.take(ctx.engine, limits, now, BACKOFF)
    if until is not None:
        wait = max(1, math.ceil((until - now).total_seconds()))
        minutes = math.ceil(wait / 60)
        raise TooMany(f"Too many failed logins: try again in {minutes} minute(s)", retry_after=wait)
    return Attempt(ctx, limits)
