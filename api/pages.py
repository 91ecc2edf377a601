"""What every server-rendered page shares: the Jinja environment of ``api/templates`` and the
headers a page is answered with (a strict Content-Security-Policy around the page's nonce).

Every value a page shows passes ``shown``: a control, line separator or bidi control in it
(``core.text``) is shown as a visible ``\\uXXXX`` marker, never raw. Entry refuses them in texts
people read, but not in what was stored before that rule, nor in what nobody could refuse (the
executionParams an agent sends at verify, recorded in the audit trail). Line feeds are kept: a
description or a document's value may hold them, and a page breaks a line only where we say so
(outside ``<pre>`` and form fields, a line feed is a space).
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import Any

from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape
from markupsafe import Markup

from core.text import escaped


def shown(value: Any) -> Any:
    """A value as a page shows it: text with ``core.text``'s unsafe characters but the line feed
    as ``\\uXXXX`` (markup too: what it was made of was shown through here)."""
    if isinstance(value, Markup):
        return Markup(escaped(str(value), keep_lines=True))  # noqa: S704 (only \uXXXX text added)
    if isinstance(value, str):
        return escaped(value, keep_lines=True)
    return value


TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).resolve().parent / "templates"),
    autoescape=select_autoescape(["html"]),
    trim_blocks=True,
    lstrip_blocks=True,
    finalize=shown,
)


def new_nonce() -> str:
    return secrets.token_urlsafe(16)


def page_headers(
    nonce: str,
    frame_ancestors: str = "'none'",
    form_targets: list[str] | None = None,
    *,
    connect_self: bool = False,
) -> dict[str, str]:
    """Scripts and styles only with the page's nonce; forms post to this origin and, for
    ``form_targets``, to the origins a form's answer may redirect to (browsers apply form-action to
    the redirects after a submission); framed only by ``frame_ancestors``. A page whose script
    asks this origin for something (the dashboard's rule editor checking as one types) sets
    ``connect_self``; every other page may fetch nothing (``default-src 'none'``)."""
    form_action = " ".join(["'self'", *(form_targets or [])])
    connect = "connect-src 'self'; " if connect_self else ""
    return {
        "Content-Security-Policy": (
            f"default-src 'none'; style-src 'nonce-{nonce}'; script-src 'nonce-{nonce}'; {connect}"
            f"form-action {form_action}; base-uri 'none'; frame-ancestors {frame_ancestors}"
        ),
        "Referrer-Policy": "no-referrer",
        "Cache-Control": "no-store",
        "X-Content-Type-Options": "nosniff",
    }


def render_page(
    template: str,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
    connect_self: bool = False,
    **context: Any,
) -> HTMLResponse:
    """``template`` rendered with a fresh nonce, answered with ``page_headers`` (plus ``headers``);
    ``connect_self`` lets the page's script fetch from this origin."""
    nonce = new_nonce()
    html = TEMPLATES.get_template(template).render(nonce=nonce, **context)
    own = page_headers(nonce, connect_self=connect_self)
    return HTMLResponse(html, status_code=status, headers={**own, **(headers or {})})
