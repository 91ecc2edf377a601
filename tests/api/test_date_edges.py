"""Dates at the edges (issue 30, item 4): every date or date-time the API takes, in every API
version, is answered 200/201 or a 400 naming the field, never a 500, and a refused request writes
nothing. Python's dates run from 0001-01-01 to 9999-12-31; an offset (up to ±23:59) or the end of
a filter's last day can take a value out of that range in UTC, where the service keeps it.

The oracle is integer arithmetic on seconds from day one, independent of ``datetime``: a moment is
in range when, in UTC, it falls between 0001-01-01T00:00:00 and 9999-12-31T23:59:59.999999.
Hypothesis draws the edges (derandomized, no example database)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, time
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from sqlalchemy import Engine, func, select
from sqlmodel import col

from store.tables import CredentialRequest
from tests.support.api_client import SignedClient, assert_error_shape, policy_request
from wire.versioning import VERSIONS

# on both databases: what it tests goes through the storage (tests/conftest.py)
pytestmark = [pytest.mark.usefixtures("worker", "no_server_errors"), pytest.mark.both_databases]

FIRST_SECOND = date(1, 1, 1).toordinal() * 86_400
LAST_SECOND = date(9999, 12, 31).toordinal() * 86_400 + 86_399  # its microseconds too


@dataclass(frozen=True)
class Moment:
    """A date-time as sent: its parts, and the text an integrator writes."""

    day: date
    at: time
    offset_minutes: int | None  # None: no offset (a naive date-time)
    date_only: bool = False

    def text(self, zulu: bool = False) -> str:
        if self.date_only:
            return self.day.isoformat()
        written = f"{self.day.isoformat()}T{self.at.isoformat()}"
        if self.offset_minutes is None:
            return written
        if self.offset_minutes == 0 and zulu:
            return written + "Z"
        sign = "+" if self.offset_minutes >= 0 else "-"
        hours, minutes = divmod(abs(self.offset_minutes), 60)
        return f"{written}{sign}{hours:02d}:{minutes:02d}"

    def utc_second(self) -> int:
        """Whole seconds from 0001-01-01 (day one's ordinal) of the moment in UTC."""
        local = self.day.toordinal() * 86_400 + self.at.hour * 3600 + self.at.minute * 60 + self.at.second
        return local - 60 * (self.offset_minutes or 0) if not self.date_only else local

    def utc_micros(self) -> int:
        return self.utc_second() * 1_000_000 + (0 if self.date_only else self.at.microsecond)

    def in_range(self) -> bool:
        return FIRST_SECOND <= self.utc_second() <= LAST_SECOND


EDGE_DAYS = [date(1, 1, 1), date(1, 1, 2), date(2024, 2, 29), date(9999, 12, 30), date(9999, 12, 31)]
EDGE_TIMES = [time(0, 0), time(0, 0, 0, 1), time(12, 0), time(23, 59, 59), time(23, 59, 59, 999_999)]
EDGE_OFFSETS = [0, 1, -1, 14 * 60, -14 * 60, 23 * 60 + 59, -(23 * 60 + 59), 5 * 60 + 30, -12 * 60]
DAYS = st.sampled_from(EDGE_DAYS) | st.dates(min_value=date(1, 1, 1), max_value=date(9999, 12, 31))
TIMES = st.sampled_from(EDGE_TIMES) | st.times()
OFFSETS = st.sampled_from(EDGE_OFFSETS) | st.integers(-(23 * 60 + 59), 23 * 60 + 59)
WITH_OFFSET = st.builds(Moment, DAYS, TIMES, OFFSETS)
FILTER_VALUES = (
    WITH_OFFSET
    | st.builds(Moment, DAYS, TIMES, st.none())
    | st.builds(Moment, DAYS, st.just(time(0, 0)), st.none(), st.just(True))
)
HYPOTHESIS = settings(
    max_examples=50,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def lines(resp: httpx.Response) -> list[str]:
    """A 400's sentences (the older versions join them into one string)."""
    message = assert_error_shape(resp, 400)["message"]
    return [message] if isinstance(message, str) else list(message)


def requests_of(engine: Engine, org_id: str) -> int:
    with engine.connect() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(CredentialRequest)
                .where(col(CredentialRequest.organization_id) == org_id)
            ).scalar_one()
        )


def body_in(version: str, credential: dict[str, Any]) -> dict[str, Any]:
    """A POST /request body with one POLICY credential, in ``version``'s shape."""
    body = policy_request()
    body["credentials"] = [{**body["credentials"][0], **credential}]
    if version == "2026-09-01":  # took users: [{contact}]
        body["users"] = [{"contact": c} for c in body.pop("contacts")]
    return body


# --- the attacks of the issue, in every version -------------------------------------------------


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", ["/request", "/activity"])
async def test_the_last_day_of_the_calendar_ends_a_filter(api: SignedClient, path: str, version: str) -> None:
    """``dateTo=9999-12-31`` was a 500 (its end of day overflowed): it is the end of time."""
    resp = await api.get(
        path, params={"dateFrom": "2026-01-01", "dateTo": "9999-12-31"}, headers={"API-Version": version}
    )
    assert resp.status_code == 200, resp.text
    assert set(resp.json()) == {"data", "totalPages"}


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("path", ["/request", "/activity"])
@pytest.mark.parametrize(
    ("params", "field"),
    [
        ({"dateFrom": "0001-01-01T00:00:00+14:00"}, "dateFrom"),
        ({"dateFrom": "0001-01-01T13:59:59.999+14:00", "dateTo": "2026-01-01"}, "dateFrom"),
        ({"dateFrom": "2026-01-01", "dateTo": "9999-12-31T23:59:59.999999-14:00"}, "dateTo"),
        ({"dateFrom": "2026-01-01", "dateTo": "9999-12-31T23:00:00-01:00"}, "dateTo"),
    ],
)
async def test_an_offset_that_leaves_the_calendar_is_a_400_naming_the_filter(
    api: SignedClient, path: str, version: str, params: dict[str, str], field: str
) -> None:
    said = lines(await api.get(path, params=params, headers={"API-Version": version}))
    assert any(line.startswith(f"{field} is out of range") for line in said), said


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize(
    ("credential", "field"),
    [
        ({"validUntil": "9999-12-31T23:59:59.999999-14:00"}, "validUntil"),
        ({"validFrom": "0001-01-01T00:00:00+14:00"}, "validFrom"),
        ({"validFrom": "0001-01-01T00:00:00+00:01"}, "validFrom"),
        ({"validFrom": "2026-01-01T00:00:00Z", "validUntil": "9999-12-31T23:59:59-00:01"}, "validUntil"),
    ],
)
async def test_a_validity_out_of_range_is_a_400_naming_it_and_nothing_is_written(
    api: SignedClient, engine: Engine, version: str, credential: dict[str, Any], field: str
) -> None:
    before = requests_of(engine, api.creds.organization_id)
    resp = await api.post("/request", body_in(version, credential), headers={"API-Version": version})
    said = lines(resp)
    assert any(f"credentials.0.{field}: is out of range" in line for line in said), said
    assert requests_of(engine, api.creds.organization_id) == before


@pytest.mark.parametrize("version", VERSIONS)
async def test_the_first_and_last_moments_are_taken_and_read_back(api: SignedClient, version: str) -> None:
    credential = {"validFrom": "0001-01-01T00:00:00Z", "validUntil": "9999-12-31T23:59:59.999-00:00"}
    created = await api.post("/request", body_in(version, credential), headers={"API-Version": version})
    assert created.status_code == 201, created.text
    request_id = created.json()["data"]["id"] if "data" in created.json() else created.json()["id"]
    stored = (await api.get(f"/request/{request_id}")).json()["credentials"][0]
    expected = ("0001-01-01T00:00:00.000Z", "9999-12-31T23:59:59.999Z")
    assert (stored["validFrom"], stored["validUntil"]) == expected


# --- every edge: hypothesis ---------------------------------------------------------------------


@HYPOTHESIS
@given(version=st.sampled_from(VERSIONS), first=FILTER_VALUES, last=FILTER_VALUES | st.none())
async def test_list_filters_at_any_edge_answer_200_or_a_400_naming_the_filter(
    api: SignedClient, version: str, first: Moment, last: Moment | None
) -> None:
    params = {"dateFrom": first.text(zulu=True)} | ({"dateTo": last.text()} if last else {})
    for path in ("/request", "/activity"):
        resp = await api.get(path, params=params, headers={"API-Version": version})
        event(f"{path} {resp.status_code}")
        in_range = first.in_range() and (last is None or last.in_range())
        ordered = last is None or not in_range or last.utc_second() // 86_400 >= first.utc_second() // 86_400
        if in_range and ordered:
            assert resp.status_code == 200, (params, resp.text)
            continue
        said = lines(resp)
        named = "dateFrom" if not first.in_range() else "dateTo"
        assert any(line.startswith(named) for line in said), (params, said)


@HYPOTHESIS
@given(
    version=st.sampled_from(VERSIONS),
    valid_from=WITH_OFFSET | st.none(),
    valid_until=WITH_OFFSET | st.none(),
)
async def test_a_validity_at_any_edge_is_201_or_a_400_naming_it_with_nothing_written(
    api: SignedClient, engine: Engine, version: str, valid_from: Moment | None, valid_until: Moment | None
) -> None:
    sent = {
        name: moment
        for name, moment in (("validFrom", valid_from), ("validUntil", valid_until))
        if moment is not None
    }
    credential = {name: moment.text(zulu=True) for name, moment in sent.items()}
    before = requests_of(engine, api.creds.organization_id)
    resp = await api.post("/request", body_in(version, credential), headers={"API-Version": version})
    event(f"POST /request {resp.status_code}")
    out_of_range = [name for name, moment in sent.items() if not moment.in_range()]
    ordered = valid_from is None or valid_until is None or valid_until.utc_micros() > valid_from.utc_micros()
    if not out_of_range and ordered:
        assert resp.status_code == 201, (credential, resp.text)
        assert requests_of(engine, api.creds.organization_id) == before + 1
        return
    said = lines(resp)
    if out_of_range:
        assert any(f"credentials.0.{out_of_range[0]}: is out of range" in line for line in said), said
    else:
        assert any("validUntil must be after validFrom" in line for line in said), said
    assert requests_of(engine, api.creds.organization_id) == before
