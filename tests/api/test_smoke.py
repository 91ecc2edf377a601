"""The foundation's main path through the real app: create, list, read, cancel."""

from __future__ import annotations

from tests.support.api_client import SignedClient, assert_error_shape, policy_request


async def test_create_list_get_cancel(api: SignedClient) -> None:
    created = await api.post("/request", policy_request(internalId="ext-1"))
    assert created.status_code == 201, created.text
    assert created.headers["API-Version"] == "2026-11-01"
    data = created.json()["data"]
    assert len(data["id"]) == 24 and data["canceledAt"] is None
    assert data["credentials"][0]["status"] == "DRAFT"
    listed = await api.get("/request")
    assert [r["id"] for r in listed.json()["data"]] == [data["id"]]
    assert (await api.delete(f"/request/{data['id']}")).json() == {"success": True}
    after = (await api.get(f"/request/{data['id']}")).json()
    assert after["canceledAt"] is not None and after["status"] == "CANCELED"
    assert_error_shape(await api.delete(f"/request/{data['id']}"), 409)
