"""``/docs``: Swagger UI served from the installed ``fastapi-swagger`` package, never from a CDN.

Only the package's copy of Swagger UI's distribution is used (its ``patch_fastapi`` is not): the
page, its assets' path and its headers are ours. Swagger UI 5 reads OpenAPI 3.1 and shows the
document's webhooks; the 4.x of ``swagger-ui-bundle``, used before, showed "Unable to render this
definition" for any 3.1 document.

The page shares its origin with the subject's approval pages, so a script fetched from a third
party (unpinned, without SRI) would run with that origin's authority. When the package is missing
there is no ``/docs`` at all. ReDoc is not served (it has no packaged distribution we install).
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
ASSETS = f"{DOCS_URL}/assets"
# the page's own inline start-up script is the only inline code; everything else is same-origin
DOCS_CSP = (
    "default-src 'none'; script-src 'self' 'unsafe-inline'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'none'; "
    "frame-ancestors 'none'"
)


def swagger_ui_dir() -> Path | None:
    """Where the installed package keeps the Swagger UI distribution, None when it is absent."""
    try:
        found = resources.files("fastapi_swagger.resources")
    except ModuleNotFoundError:
        return None
    path = Path(str(found))
    return path if (path / "swagger-ui-bundle.js").is_file() else None


def install_docs(app: FastAPI) -> None:
    """Serve ``/docs`` from the package (the app must be made with ``docs_url=None``)."""
    assets = swagger_ui_dir()
    if assets is None or app.openapi_url is None:
        return
    app.mount(ASSETS, StaticFiles(directory=assets), name="swagger-ui")
    openapi_url = app.openapi_url

    async def swagger_ui(_: Request) -> HTMLResponse:
        page = get_swagger_ui_html(
            openapi_url=openapi_url,
            title=f"{app.title} API",
            swagger_js_url=f"{ASSETS}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS}/favicon-32x32.png",
            swagger_ui_parameters={"validatorUrl": None},  # no badge fetched from swagger.io
        )
        page.headers["Content-Security-Policy"] = DOCS_CSP
        page.headers["Referrer-Policy"] = "no-referrer"
        return page

    # a plain route, like FastAPI's own /docs: public by api.auth's prefixes, not an API operation
    app.add_route(DOCS_URL, swagger_ui, methods=["GET"], include_in_schema=False)
