"""2026-11-01's link between a request and the one it was sent again as (issue 32), undone towards
2026-09-01: the releases' ``GenerateRequestEntity`` has neither ``resentFrom`` nor ``resentAs``."""

from __future__ import annotations

from wire.versioning import Body, VersionChange

V2026_11_01 = "2026-11-01"
FIELDS = ("resentFrom", "resentAs")


def _request_had_no_resend_links(body: Body) -> Body:
    data = body.get("data")
    if isinstance(data, dict):
        return {**body, "data": {k: v for k, v in data.items() if k not in FIELDS}}
    return {k: v for k, v in body.items() if k not in FIELDS}


VERSION_CHANGES: list[VersionChange] = [
    VersionChange(
        V2026_11_01,
        "a request names the one it was sent again from and as (resentFrom, resentAs)",
        ("get_request", "create_request"),
        to_previous=_request_had_no_resend_links,
    ),
]
