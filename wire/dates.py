"""Dates and date-times where they enter: the list filters (``dateFrom`` / ``dateTo`` of
``GET /request`` and ``GET /activity``, and the dashboard's same filters), the date-times of a
body (``validFrom`` / ``validUntil``) and the command line's (``--expires-at``).

Every moment is kept in UTC, so a value is taken only when it still is a date once its offset is
applied and, for a filter's last day, once the end of that day is: Python's dates (and so ours)
run from 0001-01-01 to 9999-12-31, and ``0001-01-01T00:00:00+14:00`` or
``9999-12-31T23:59:59-14:00`` fall outside in UTC. Such a value is a ``ValueError`` with the words
an integrator reads, never an ``OverflowError`` (a 500). The database holds every moment in that
range: PostgreSQL sessions are in UTC (``store.db``), so none is shifted out of it when read back.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time

from policy.params import OUT_OF_RANGE

ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?)?$")
NOT_ISO = "must be an ISO 8601 date or date-time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z"


def in_utc(value: datetime) -> datetime:
    """``value`` (aware; naive means UTC) as UTC; ``ValueError(OUT_OF_RANGE)`` when its offset takes
    it outside the years 1 to 9999."""
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    try:
        return value.astimezone(UTC)
    except OverflowError:
        raise ValueError(OUT_OF_RANGE) from None


def parse_iso(name: str, raw: str) -> datetime:
    """An ISO 8601 date or date-time (naive means UTC) as an aware UTC date-time; ``ValueError``
    naming ``name`` otherwise. Numbers are refused rather than read as seconds since 1970
    (``20250310`` is not a date here)."""
    value = raw.strip()
    try:
        if not ISO_DATE_RE.match(value):
            raise ValueError
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    except ValueError:
        raise ValueError(f"{name} {NOT_ISO}") from None
    try:
        return in_utc(parsed)
    except ValueError as exc:
        raise ValueError(f"{name} {exc}") from None


def utc_day(name: str, raw: str) -> date:
    """The UTC day of an ISO 8601 date or date-time."""
    return parse_iso(name, raw).date()


def day_start(name: str, raw: str) -> datetime:
    """The start (UTC) of the UTC day of an ISO 8601 date or date-time; naive means UTC."""
    return datetime.combine(utc_day(name, raw), time.min, tzinfo=UTC)


def day_end(name: str, raw: str) -> datetime:
    """The last microsecond (UTC) of the UTC day of an ISO 8601 date or date-time: 9999-12-31 has
    one, where adding a day to its start would leave the range."""
    return datetime.combine(utc_day(name, raw), time.max, tzinfo=UTC)


def day_range(date_from: str | None, date_to: str | None) -> tuple[datetime | None, datetime | None]:
    """``dateFrom`` / ``dateTo`` as the start of the first and the end of the last UTC day they
    name; ``ValueError`` when ``dateTo`` comes without ``dateFrom`` or before it."""
    if date_to is not None and date_from is None:
        raise ValueError("dateTo requires dateFrom")
    start = day_start("dateFrom", date_from) if date_from is not None else None
    end = day_end("dateTo", date_to) if date_to is not None else None
    if start and end and end < start:
        raise ValueError("dateTo must not be before dateFrom")
    return start, end
