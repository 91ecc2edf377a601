"""store.portal: the purge drops expired challenges and ended or too old sessions, and nothing
live; the worker's pass over unannounced revocations takes a subject's revocation too."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import Engine

from store import portal
from store.db import read_session, utcnow
from store.tables import PortalChallenge, PortalSession


def test_the_purge_keeps_what_is_live(engine: Engine) -> None:
    now = utcnow()
    hour = timedelta(hours=1)
    portal.open_challenge(
        engine, "c-old" + "0" * 59, "h" * 64, "a\u2022\u2022\u2022@x", now - 3 * hour, now - 2 * hour
    )
    portal.open_challenge(engine, "c-new" + "0" * 59, "h" * 64, "a\u2022\u2022\u2022@x", now, now + hour / 6)
    portal.open_session(engine, "-", "s-old" + "0" * 59, "h" * 64, "a\u2022\u2022\u2022@x", now - 3 * hour)
    portal.open_session(engine, "-", "s-end" + "0" * 59, "h" * 64, "a\u2022\u2022\u2022@x", now - 2 * hour)
    portal.end_session(engine, "s-end" + "0" * 59, now - 2 * hour)
    portal.open_session(engine, "-", "s-new" + "0" * 59, "h" * 64, "a\u2022\u2022\u2022@x", now)
    assert portal.purge(engine, now) >= 3
    with read_session(engine) as session:
        assert session.get(PortalChallenge, "c-old" + "0" * 59) is None
        assert session.get(PortalChallenge, "c-new" + "0" * 59) is not None
        assert session.get(PortalSession, "s-old" + "0" * 59) is None
        assert session.get(PortalSession, "s-end" + "0" * 59) is None
        assert session.get(PortalSession, "s-new" + "0" * 59) is not None
