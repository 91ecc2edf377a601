"""The dashboard's action editor from a test's side: a new action created by form, and what a page
of the editor shows (the problems beside a row, the "Try it" results)."""

from __future__ import annotations

import html
import re

import httpx


def problems_of(page: str, row: str) -> list[str]:
    """The problems the page shows beside a param or rule (``r-0``), or of the draft (``general``)."""
    found = re.search(rf'id="{row}-problems"[^>]*>(.*?)</div>', page, re.DOTALL)
    assert found, f"no problems box for {row}"
    return [html.unescape(p) for p in re.findall(r"<p>(.*?)</p>", found.group(1), re.DOTALL)]


def results_of(page: str) -> dict[str, tuple[str, str]]:
    """The "Try it" results: rule -> (result, reason)."""
    rows = re.findall(
        r'<td data-label="Rule">(.*?)</td>\s*<td data-label="Result" class="result-\w+">(\w+)</td>\s*'
        r'<td data-label="Why">(.*?)</td>',
        page,
    )
    return {html.unescape(rule): (result, html.unescape(why)) for rule, result, why in rows}


def key_of(location: str) -> str:
    """The UUID of the action whose new draft ``location`` (a creation's redirect) names."""
    found = re.fullmatch(r"/dashboard/actions/([0-9a-f-]{36})/versions/1\?notice=created", location)
    assert found, location
    return found.group(1)


async def create(browser: httpx.AsyncClient, csrf: str, name: str = "Pay rent") -> str:
    """A new action ``name`` created by the dashboard's form: its UUID."""
    created = await browser.post(
        "/dashboard/actions", data={"csrf": csrf, "name": name, "description": "Rent"}
    )
    assert created.status_code == 303, created.text
    return key_of(created.headers["location"])


async def followed(browser: httpx.AsyncClient, answer: httpx.Response) -> httpx.Response:
    """The editor's answer as the browser ends up showing it: a kept draft (Check, Save) answers
    303 to the version's page (post, redirect, get), which is read; anything else as it came."""
    location = answer.headers.get("location", "")
    if answer.status_code != 303 or not location.endswith(("?notice=saved", "?notice=checked")):
        return answer
    return await browser.get(answer.headers["location"])
