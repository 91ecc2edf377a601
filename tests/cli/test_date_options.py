"""The command line's dates (issue 30, item 4): ``mandatum key create --expires-at`` takes an ISO
8601 date or date-time with or without an offset (none means UTC), as its help says, and refuses
one its offset takes out of the calendar in UTC with a message naming the option (exit 1, no key
made), never a traceback."""

from __future__ import annotations

import pytest

from tests.support.cli import Cli


def _keys(cli: Cli, org_id: str) -> list[dict[str, object]]:
    return list(cli.json("key", "list", "--org", org_id))


@pytest.mark.parametrize(
    "value",
    ["9999-12-31T23:59:59.999999-14:00", "9999-12-31T23:00:00-01:00", "0001-01-01T00:00:00+00:01"],
)
def test_an_expiry_out_of_the_calendar_is_refused_naming_the_option(cli: Cli, value: str) -> None:
    org = cli.json("org", "create", "--name", "Dated Org")
    before = _keys(cli, org["organizationId"])
    done = cli.run("key", "create", "--org", org["organizationId"], "--expires-at", value)
    assert done.returncode == 1, (done.stdout, done.stderr)
    out_of_range = "--expires-at is out of range: in UTC it must fall between 0001-01-01 and 9999-12-31"
    assert out_of_range in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    assert _keys(cli, org["organizationId"]) == before


@pytest.mark.parametrize(
    ("value", "stored"),
    [
        ("9999-12-31T23:59:59.999999Z", "9999-12-31T23:59:59.999999+00:00"),
        ("2999-01-31T12:00:00+01:00", "2999-01-31T11:00:00+00:00"),
        ("2999-01-31", "2999-01-31T00:00:00+00:00"),
    ],
)
def test_an_expiry_with_an_offset_is_kept_in_utc(cli: Cli, value: str, stored: str) -> None:
    org = cli.json("org", "create", "--name", "Dated Org")
    made = cli.json("key", "create", "--org", org["organizationId"], "--expires-at", value)
    assert made["expiresAt"] == stored
    [listed] = [k for k in _keys(cli, org["organizationId"]) if k["keyId"] == made["keyId"]]
    assert listed["expiresAt"] == stored  # read back from the database as written
