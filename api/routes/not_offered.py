"""Routes of the hosted service's SDK that this service does not offer (docs/sdk.md lists them).

Each answers a 404 that names it as not offered, so an SDK call reads as a clear refusal instead
of a bare "Not Found" that looks like a wrong base URL. They sit behind the signature check like
every API route, and stay out of the OpenAPI document.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import APIRouter, Request

from api.errors import ApiError

router = APIRouter(include_in_schema=False)

NOT_OFFERED: tuple[tuple[str, str, str], ...] = (
    ("GET", "/intelligence/action", "the activity trail (GET /activity) holds these events"),
    ("GET", "/intelligence/snapshot", "the activity trail (GET /activity) holds these events"),
    ("GET", "/intelligence/window", "the activity trail (GET /activity) holds these events"),
)


def _refuse(method: str, path: str, instead: str) -> Callable[[Request], Awaitable[None]]:
    async def not_offered(request: Request) -> None:
        raise ApiError(404, f"{method} {path} is not offered by this service: {instead}")

    return not_offered


for _method, _path, _instead in NOT_OFFERED:
    router.add_api_route(
        _path, _refuse(_method, _path, _instead), methods=[_method], name=f"not_offered {_method} {_path}"
    )
