"""Dashboard sessions (issue 14): the member of a session's cookie, logging out, a member's open
sessions and ending them, and the CSRF token of a session's forms. Opening one is logging in
(``services.logins``).

- Session tokens are 32 random bytes, URL-safe; the database keeps their SHA-256 only
  (``services.members.digest``), so a copy of the database opens no session.
- A session ends when idle for ``dashboard_idle``, ``dashboard_session_max`` after login, at logout,
  when an owner (or the member, for their other sessions) ends it, or when the member's password is
  set again (every session of the member).
- The CSRF token of a form is an HMAC of the session token under a key derived from the master key
  (HKDF-SHA256, its own ``info``): nothing to store, and it changes with every session.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import datetime

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from core.actors import Actor
from services.context import Context
from services.errors import NotFound
from services.members import digest
from store import member_sessions as sessions
from store import members as store
from store.db import utcnow
from store.tables import Member, MemberSession


def session_member(ctx: Context, session_token: str | None, now: datetime | None = None) -> Member | None:
    """The member of a live session (its last use becomes now), None otherwise."""
    if not session_token or len(session_token) > 200:
        return None
    now = now or utcnow()
    return sessions.live_session(ctx.engine, digest(session_token), now, now - ctx.settings.dashboard_idle)


def logout(ctx: Context, session_token: str) -> None:
    sessions.end_session(ctx.engine, digest(session_token), utcnow())


def sessions_of(ctx: Context, member: Member) -> list[MemberSession]:
    now = utcnow()
    return sessions.live_sessions(ctx.engine, member.id, now, now - ctx.settings.dashboard_idle)


def is_session(session: MemberSession, token: str) -> bool:
    """Whether ``session`` is the one of the cookie ``token``."""
    return hmac.compare_digest(session.token_hash, digest(token))


def end_sessions(
    ctx: Context, actor: Actor, org_id: str | None, member_id: str, keep: str | None = None
) -> int:
    """End a member's sessions (but ``keep``, the asking session's token); how many ended
    (``MEMBER_SESSIONS_ENDED`` naming ``actor``). ``NotFound`` for a member of another
    organization."""
    keep_hash = digest(keep) if keep else None
    try:
        return store.end_member_sessions(
            ctx.engine, org_id, member_id, utcnow(), actor=str(actor), keep=keep_hash
        )
    except store.NotFound as exc:
        raise NotFound(str(exc)) from exc


def _csrf_key(ctx: Context) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=32, salt=None, info=b"mandatum dashboard csrf v1").derive(
        ctx.settings.master_key_bytes()
    )


def csrf_token(ctx: Context, session_token: str) -> str:
    """The token every form of this session carries."""
    return hmac.new(_csrf_key(ctx), digest(session_token).encode(), hashlib.sha256).hexdigest()


def csrf_valid(ctx: Context, session_token: str | None, given: str | None) -> bool:
    if not session_token or not given or len(given) != 64:
        return False
    return hmac.compare_digest(csrf_token(ctx, session_token), given)
