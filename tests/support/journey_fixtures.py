"""Fixtures for tests that go where a person goes: a real browser and a real mailbox.

Registered for every test by ``pytest_plugins`` in tests/conftest.py.

- ``smtp_server`` (session): a started :class:`tests.support.smtp_server.SmtpServer`; it is shared, so a
  test calls ``clear()`` first or waits for its own (unique) recipient.
- ``chromium_browser`` (session): Debian's /usr/bin/chromium driven by Playwright (headless);
  ``make browser`` installs it. Playwright's own browser downloads are never used.
- ``browser_page`` / ``phone_page`` (per test): a fresh browser context (no shared cookies or
  storage) and a page in it; desktop viewport, or a 390x844 touch phone. Actions wait 10 s at
  most unless told otherwise. When the test fails, a screenshot is saved in the test's tmp_path
  and its path printed.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator, Generator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from playwright.async_api import Browser, Page, async_playwright

from tests.support.smtp_server import SmtpServer

CHROMIUM = "/usr/bin/chromium"

_CALL_REPORT = pytest.StashKey[pytest.TestReport]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item,
    call: pytest.CallInfo[None],
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Keep the outcome of each test's call phase, for the page fixtures' teardown to see."""
    report = yield
    if report.when == "call":
        item.stash[_CALL_REPORT] = report
    return report


@pytest.fixture(scope="session")
def smtp_server() -> Iterator[SmtpServer]:
    server = SmtpServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest_asyncio.fixture(scope="session", loop_scope="session")
async def chromium_browser() -> AsyncIterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(
            f"the browser tests need Debian's chromium at {CHROMIUM}: run `make browser` "
            "(or, as root, `apt-get install -y chromium`)",
            pytrace=False,
        )
    playwright = await async_playwright().start()
    try:
        browser = await playwright.chromium.launch(
            executable_path=CHROMIUM, headless=True, args=["--no-sandbox"]
        )
        try:
            yield browser
        finally:
            await browser.close()
    finally:
        await playwright.stop()


@asynccontextmanager
async def _page(
    browser: Browser, request: pytest.FixtureRequest, tmp_path: Path, **context_options: Any
) -> AsyncIterator[Page]:
    context = await browser.new_context(**context_options)
    context.set_default_timeout(10_000)  # Playwright's 30 s is long for a page on this machine
    try:
        page = await context.new_page()
        yield page
        report = request.node.stash.get(_CALL_REPORT, None)
        if report is not None and report.failed and not page.is_closed():
            path = tmp_path / "failure.png"
            with contextlib.suppress(Exception):  # a screenshot is a help, never a second failure
                await page.screenshot(path=path, full_page=True, timeout=5_000)
                print(f"screenshot of the page at failure: {path}")
    finally:
        await context.close()


@pytest_asyncio.fixture(loop_scope="session")
async def browser_page(
    chromium_browser: Browser, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Page]:
    """A page in a fresh context, at Playwright's default desktop viewport (1280x720)."""
    async with _page(chromium_browser, request, tmp_path) as page:
        yield page


@pytest_asyncio.fixture(loop_scope="session")
async def phone_page(
    chromium_browser: Browser, request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[Page]:
    """A page in a fresh context that looks like a phone: 390x844, mobile, touch."""
    async with _page(
        chromium_browser,
        request,
        tmp_path,
        viewport={"width": 390, "height": 844},
        is_mobile=True,
        has_touch=True,
        device_scale_factor=3,
    ) as page:
        yield page
