"""CONTRACT section 10: API-Version resolution, pinning, and version changes."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import Engine, update

from core.secretbox import SecretCipher
from core.settings import Settings
from store import orgs
from store.tables import Organization
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient, assert_error_shape, policy_request
from wire import versioning
from wire.versioning import VersionChange

FIRST = versioning.VERSIONS[0]


def _utc_today() -> date:
    return datetime.now(UTC).date()


# --- over HTTP -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "2026-1-1",
        "latest",
        "2026/11/01",
        "20261101",
        "2026-11-01T00:00",
        " 2026-11-1",
        "v1",
        "2026-11-01,2026-11-02",
        "2026-11-01x",
    ],
)
async def test_malformed_version_is_400(api: SignedClient, value: str) -> None:
    resp = await api.get("/request", headers={"API-Version": value})
    body = assert_error_shape(resp, 400)
    assert "YYYY-MM-DD" in str(body["message"]) or "not a valid date" in str(body["message"])


@pytest.mark.parametrize("value", ["2026-02-30", "2026-13-01", "2026-00-10", "2027-02-29"])
async def test_impossible_date_is_400(api: SignedClient, value: str) -> None:
    body = assert_error_shape(await api.get("/request", headers={"API-Version": value}), 400)
    assert value in str(body["message"])


async def test_future_date_is_400(api: SignedClient) -> None:
    tomorrow = (_utc_today() + timedelta(days=1)).isoformat()
    body = assert_error_shape(await api.get("/request", headers={"API-Version": tomorrow}), 400)
    assert "future" in str(body["message"])
    assert_error_shape(await api.get("/request", headers={"API-Version": "2999-01-01"}), 400)


async def test_today_is_accepted(api: SignedClient) -> None:
    resp = await api.get("/request", headers={"API-Version": _utc_today().isoformat()})
    assert resp.status_code == 200, resp.text
    assert resp.headers["API-Version"] == versioning.newest()


async def test_past_date_resolves_to_the_newest_version_not_after_it(api: SignedClient) -> None:
    after_first = (date.fromisoformat(FIRST) + timedelta(days=3)).isoformat()
    assert after_first <= _utc_today().isoformat()
    resp = await api.get("/request", headers={"API-Version": after_first})
    assert resp.status_code == 200, resp.text
    assert resp.headers["API-Version"] == FIRST
    exact = await api.post("/request", policy_request(), headers={"API-Version": FIRST})
    assert exact.status_code == 201 and exact.headers["API-Version"] == FIRST


async def test_date_before_the_first_version_is_400(api: SignedClient) -> None:
    before = (date.fromisoformat(FIRST) - timedelta(days=1)).isoformat()
    body = assert_error_shape(await api.get("/request", headers={"API-Version": before}), 400)
    assert FIRST in str(body["message"])
    assert_error_shape(await api.get("/request", headers={"API-Version": "1999-01-01"}), 400)


async def test_lower_case_header_name_is_read(api: SignedClient) -> None:
    assert_error_shape(await api.get("/request", headers={"api-version": "latest"}), 400)


async def test_a_refused_version_does_not_spend_the_signature(api: SignedClient) -> None:
    """The client can fix its API-Version header and resend the same signed request."""
    headers = api.headers(b"")
    bad = await api.http.delete("/request/" + "0" * 24, headers={**headers, "API-Version": "latest"})
    assert_error_shape(bad, 400)
    good = await api.http.delete("/request/" + "0" * 24, headers={**headers, "API-Version": FIRST})
    assert_error_shape(good, 404)


async def test_errors_after_authentication_carry_the_version(api: SignedClient) -> None:
    resp = await api.get("/request/" + "0" * 24)
    assert_error_shape(resp, 404)
    assert resp.headers["API-Version"] == versioning.newest()


def _pinned(engine: Engine, org_id: str) -> str | None:
    return orgs.get_organization(engine, org_id).api_version


async def test_first_call_pins_the_newest_version(
    api: SignedClient, org: Credentials, engine: Engine
) -> None:
    assert _pinned(engine, org.organization_id) is None
    # a refused call pins nothing
    assert_error_shape(await api.get("/request", secret="wrong"), 401)
    assert _pinned(engine, org.organization_id) is None
    first = await api.get("/request")
    assert first.status_code == 200
    assert _pinned(engine, org.organization_id) == versioning.newest()
    assert first.headers["API-Version"] == versioning.newest()
    later = await api.post("/request", policy_request())
    assert later.status_code == 201 and later.headers["API-Version"] == versioning.newest()


@pytest.fixture
def two_versions(monkeypatch: pytest.MonkeyPatch) -> str:
    """A second, newer version (dated three days after the first) for the duration of a test."""
    second = (date.fromisoformat(FIRST) + timedelta(days=3)).isoformat()
    assert second <= _utc_today().isoformat()
    monkeypatch.setattr(versioning, "VERSIONS", [FIRST, second])
    return second


def _rename_name_to_title(body: dict[str, Any]) -> dict[str, Any]:
    """The newer shape calls a request's `name` what the older one called `title`; the
    operations wrap it in `data` (one request or a page of them), except `GET /request/{id}`."""

    def renamed(request: dict[str, Any]) -> dict[str, Any]:
        out = dict(request)
        out["title"] = out.pop("name")
        return out

    if "data" not in body:
        return renamed(body)
    data = body["data"]
    return {**body, "data": [renamed(r) for r in data] if isinstance(data, list) else renamed(data)}


REQUEST_OPERATIONS = ("create_request", "get_request", "list_requests")


async def test_pinned_version_is_kept_when_a_newer_version_exists(
    http: Any,
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    two_versions: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(
        versioning,
        "CHANGES",
        [
            VersionChange(two_versions, "request name was title", REQUEST_OPERATIONS, _rename_name_to_title),
        ],
    )
    old_creds = new_org(engine, cipher, settings)
    with engine.begin() as conn:
        conn.execute(
            update(Organization)
            .where(Organization.id == old_creds.organization_id)  # type: ignore[arg-type]
            .values(api_version=FIRST)
        )
    old = SignedClient(http, old_creds)
    new = SignedClient(http, new_org(engine, cipher, settings))

    created_old = await old.post("/request", policy_request(name="Old client"))
    assert created_old.status_code == 201, created_old.text
    assert created_old.headers["API-Version"] == FIRST
    assert created_old.json()["data"]["title"] == "Old client" and "name" not in created_old.json()["data"]
    assert _pinned(engine, old_creds.organization_id) == FIRST

    created_new = await new.post("/request", policy_request(name="New client"))
    assert created_new.headers["API-Version"] == two_versions
    assert created_new.json()["data"]["name"] == "New client"
    assert _pinned(engine, new.creds.organization_id) == two_versions

    # a header overrides the pin, both ways, and never changes it
    request_id = created_old.json()["data"]["id"]
    upgraded = await old.get(f"/request/{request_id}", headers={"API-Version": two_versions})
    assert upgraded.headers["API-Version"] == two_versions
    assert upgraded.json()["name"] == "Old client"
    between = (date.fromisoformat(FIRST) + timedelta(days=1)).isoformat()
    downgraded = await new.post(
        "/request", policy_request(name="Asked old"), headers={"API-Version": between}
    )
    assert downgraded.headers["API-Version"] == FIRST
    assert downgraded.json()["data"]["title"] == "Asked old"
    assert _pinned(engine, old_creds.organization_id) == FIRST
    assert _pinned(engine, new.creds.organization_id) == two_versions


async def test_reads_are_served_in_the_older_shape(
    api: SignedClient, two_versions: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        versioning,
        "CHANGES",
        [
            VersionChange(two_versions, "request name was title", REQUEST_OPERATIONS, _rename_name_to_title),
        ],
    )
    created = await api.post("/request", policy_request(name="Shape"), headers={"API-Version": FIRST})
    assert created.status_code == 201 and created.json()["data"]["title"] == "Shape"
    one = await api.get(f"/request/{created.json()['data']['id']}", headers={"API-Version": FIRST})
    assert one.status_code == 200, one.text
    assert one.json()["title"] == "Shape" and "name" not in one.json()
    page = await api.get("/request", headers={"API-Version": FIRST})
    assert page.status_code == 200, page.text
    assert page.json()["data"][0]["title"] == "Shape"


# --- unit: resolve -------------------------------------------------------------------------------


def test_resolve_without_header_uses_the_pin_or_the_newest() -> None:
    assert versioning.resolve(None, None) == versioning.newest()
    assert versioning.resolve("", None) == versioning.newest()
    assert versioning.resolve("   ", "2026-11-01") == "2026-11-01"
    assert versioning.resolve(None, "2026-11-01") == "2026-11-01"


def test_resolve_walks_down_to_the_newest_version_not_after(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(versioning, "VERSIONS", ["2026-01-10", "2026-03-01", "2026-06-15"])
    today = date(2026, 12, 31)
    assert versioning.resolve("2026-01-10", None, today) == "2026-01-10"
    assert versioning.resolve("2026-02-28", None, today) == "2026-01-10"
    assert versioning.resolve("2026-03-01", None, today) == "2026-03-01"
    assert versioning.resolve("2026-06-14", "2026-06-15", today) == "2026-03-01"
    assert versioning.resolve("2026-12-31", None, today) == "2026-06-15"
    assert versioning.resolve(" 2026-06-15 ", None, today) == "2026-06-15"
    assert versioning.newest() == "2026-06-15"
    for bad in (
        "2026-01-09",
        "2027-01-01",
        "2026-02-30",
        "2026-1-10",
        "latest",
        "2026-06-15x",
        "\uff12\uff10\uff12\uff16-06-15",
        "2026-0\u096c-15",
    ):  # non-ASCII digits
        with pytest.raises(versioning.BadVersion) as info:
            versioning.resolve(bad, None, today)
        assert info.value.status == 400


# --- unit: render --------------------------------------------------------------------------------


def _tag(label: str) -> Any:
    def change(body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "applied": [*body.get("applied", []), label]}

    return change


FAKE_CHANGES = [
    VersionChange("2026-03-01", "a", "request", _tag("a@03-01")),
    VersionChange("2026-06-15", "b1", "request", _tag("b1@06-15")),
    VersionChange("2026-06-15", "b2", "request", _tag("b2@06-15")),
    VersionChange("2026-06-15", "other", "credential", _tag("credential@06-15")),
    VersionChange("2026-09-01", "c", "request", _tag("c@09-01")),
]


def test_render_undoes_newer_changes_newest_first() -> None:
    body = versioning.render("request", {}, "2026-01-10", FAKE_CHANGES)
    # newest version first; within one version, the change registered last is undone first
    assert body["applied"] == ["c@09-01", "b2@06-15", "b1@06-15", "a@03-01"]


def test_render_skips_changes_not_newer_than_the_version() -> None:
    assert versioning.render("request", {}, "2026-03-01", FAKE_CHANGES)["applied"] == [
        "c@09-01",
        "b2@06-15",
        "b1@06-15",
    ]
    assert versioning.render("request", {}, "2026-06-15", FAKE_CHANGES)["applied"] == ["c@09-01"]
    assert versioning.render("request", {"x": 1}, "2026-09-01", FAKE_CHANGES) == {"x": 1}


def test_render_only_touches_the_matching_resource() -> None:
    assert versioning.render("credential", {}, "2026-01-10", FAKE_CHANGES)["applied"] == ["credential@06-15"]
    assert versioning.render("activity", {"x": 1}, "2026-01-10", FAKE_CHANGES) == {"x": 1}


def test_render_order_does_not_depend_on_registration_order() -> None:
    shuffled = [FAKE_CHANGES[4], FAKE_CHANGES[0], FAKE_CHANGES[1], FAKE_CHANGES[3], FAKE_CHANGES[2]]
    assert versioning.render("request", {}, "2026-01-10", shuffled)["applied"][0] == "c@09-01"
    assert versioning.render("request", {}, "2026-01-10", shuffled)["applied"][-1] == "a@03-01"


def test_render_chains_real_transformations() -> None:
    changes = [
        VersionChange(
            "2026-03-01",
            "status was state",
            "request",
            lambda b: {**{k: v for k, v in b.items() if k != "status"}, "state": b["status"]},
        ),
        VersionChange(
            "2026-06-15",
            "canceledAt was a boolean canceled",
            "request",
            lambda b: {
                **{k: v for k, v in b.items() if k != "canceledAt"},
                "canceled": b["canceledAt"] is not None,
            },
        ),
    ]
    newest = {"id": "x", "status": "CANCELED", "canceledAt": "2026-06-20T00:00:00.000Z"}
    assert versioning.render("request", dict(newest), "2026-06-15", changes) == newest
    assert versioning.render("request", dict(newest), "2026-03-01", changes) == {
        "id": "x",
        "status": "CANCELED",
        "canceled": True,
    }
    assert versioning.render("request", dict(newest), "2026-01-10", changes) == {
        "id": "x",
        "state": "CANCELED",
        "canceled": True,
    }


def test_registered_changes_are_well_formed() -> None:
    """Every real change names a known version after the first, and versions ascend."""
    assert versioning.VERSIONS == sorted(set(versioning.VERSIONS))
    for change in versioning.CHANGES:
        assert change.version in versioning.VERSIONS[1:] and change.name and change.resource


def test_every_change_names_a_real_operation_or_event(settings: Settings) -> None:
    """A change registered on a misspelled route name would silently never apply."""
    from fastapi.routing import APIRoute

    from api.app import create_app
    from wire import version_changes, webhook_models

    app = create_app(settings)
    try:
        names = {r.name for r in app.routes if isinstance(r, APIRoute)}
        for router_module in (
            "requests",
            "actions",
            "approvals",
            "presentations",
            "mandates",
            "activity",
            "identity",
            "users",
        ):
            module = __import__(f"api.routes.{router_module}", fromlist=["router"])
            names |= {r.name for r in module.router.routes if isinstance(r, APIRoute)}
        events = {f"webhook:{event_type}" for event_type in webhook_models.EVENTS}
        assert len(events) == 5  # credential, identity, otp.failed, mandate.revoked, test
        events.add(versioning.ERROR_BODY)  # every error answer
        assert version_changes.CHANGES is versioning.CHANGES
        for change in versioning.CHANGES:
            resources = (change.resource,) if isinstance(change.resource, str) else change.resource
            for resource in resources:
                assert resource in names | events, (change.name, resource)
            assert (
                change.to_previous
                or change.status_to_previous
                or change.request_from_previous
                or (change.query_from_previous)
            ), change.name
    finally:
        app.state.ctx.engine.dispose()
