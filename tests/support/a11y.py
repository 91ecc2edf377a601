"""Accessibility checks in the browser tests: axe-core (``a11y/``, from the npm registry) run on a
page as it stands; a serious or critical WCAG 2.1 A/AA violation fails the test with each rule,
its help text and where it hit.

axe is evaluated through the DevTools protocol (``page.evaluate``), so the pages' strict
Content-Security-Policy stays as it is: nothing is added to the page's own scripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from playwright.async_api import Page

from tests.support.npm import npm_installed

A11Y = Path(__file__).resolve().parents[2] / "a11y"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
FAILING = ("serious", "critical")


@pytest.fixture(scope="session")
def axe_source() -> str:
    npm_installed(A11Y, "the accessibility checks with axe-core")
    return (A11Y / "node_modules" / "axe-core" / "axe.min.js").read_text()


def _described(violation: dict[str, Any]) -> str:
    where = [node["target"] for node in violation["nodes"][:3]]
    return f"{violation['id']} ({violation['impact']}): {violation['help']} at {where}"


async def assert_accessible(page: Page, axe_source: str, what: str) -> None:
    if not await page.evaluate("typeof window.axe !== 'undefined'"):
        await page.evaluate(axe_source)
    result = await page.evaluate(
        "tags => axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']})", TAGS
    )
    failing = [v for v in result["violations"] if v["impact"] in FAILING]
    assert not failing, f"{what} ({page.url}): " + "; ".join(_described(v) for v in failing)
