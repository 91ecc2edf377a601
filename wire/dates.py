"""Dates as the list filters take them (``dateFrom`` / ``dateTo`` of ``GET /request`` and
``GET /activity``, and the dashboard's same filters): an ISO 8601 date or date-time naming a whole
UTC day. Refusals are ``ValueError`` with the words an integrator reads."""

from __future__ import annotations

import re
from datetime import UTC, datetime, time, timedelta

ISO_DATE_RE = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|z|[+-]\d{2}:?\d{2})?)?$")


def day_start(name: str, raw: str) -> datetime:
    """The start (UTC) of the UTC day of an ISO 8601 date or date-time; naive means UTC.

    Numbers are refused rather than read as seconds since 1970 (``20250310`` is not a date here).
    """
    value = raw.strip()
    try:
        if not ISO_DATE_RE.match(value):
            raise ValueError
        parsed = datetime.fromisoformat(value[:-1] + "+00:00" if value[-1] in "Zz" else value)
    except ValueError:
        raise ValueError(
            f"{name} must be an ISO 8601 date or date-time, e.g. 2026-01-31 or 2026-01-31T12:00:00Z"
        ) from None
    parsed = parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
    return datetime.combine(parsed.astimezone(UTC).date(), time.min, tzinfo=UTC)


def day_range(date_from: str | None, date_to: str | None) -> tuple[datetime | None, datetime | None]:
    """``dateFrom`` / ``dateTo`` as the start of the first and the end of the last UTC day they
    name; ``ValueError`` when ``dateTo`` comes without ``dateFrom`` or before it."""
    if date_to is not None and date_from is None:
        raise ValueError("dateTo requires dateFrom")
    start = day_start("dateFrom", date_from) if date_from is not None else None
    end = (
        day_start("dateTo", date_to) + timedelta(days=1) - timedelta(microseconds=1)
        if date_to is not None
        else None
    )
    if start and end and end < start:
        raise ValueError("dateTo must not be before dateFrom")
    return start, end
