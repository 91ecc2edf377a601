"""The dashboard in Debian's Chromium, from a test's side: a member invited into a live stack, a
keyboard login, the check that a page fits its viewport, and screenshots into ``docs/screenshots/``
(linked from the README)."""

from __future__ import annotations

from pathlib import Path

from playwright.async_api import Page

from core.actors import Actor
from core.kinds import MemberRole
from core.secretbox import SecretCipher
from services import members
from services.context import Context
from tests.support.dashboard import PASSWORD
from tests.support.live_stack import LiveStack

SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def live_context(live: LiveStack) -> Context:
    """A service context on the live stack's database (no Temporal client)."""
    return Context(live.settings, live.engine, SecretCipher(live.settings.master_key_bytes()))


def invite(live: LiveStack, org_id: str, email: str, role: MemberRole = MemberRole.OWNER) -> str:
    """The one-time set-password link of a new member of ``org_id``."""
    return members.invite(live_context(live), Actor.shell_operator("tests"), org_id, email, role).link


async def fits(page: Page) -> None:
    """Nothing is wider than the viewport the page was opened with (a phone's browser would widen
    its layout viewport, and ``innerWidth`` with it, to show content that does not fit)."""
    assert page.viewport_size is not None
    width = await page.evaluate("document.documentElement.scrollWidth")
    if width <= page.viewport_size["width"]:
        return
    wider = await page.evaluate(
        """(limit) => [...document.querySelectorAll('body *')]
            .filter((e) => e.getBoundingClientRect().right > limit && e.children.length === 0)
            .slice(0, 5)
            .map((e) => `${e.tagName.toLowerCase()}: ${(e.textContent || '').trim().slice(0, 60)}`)""",
        page.viewport_size["width"],
    )
    raise AssertionError(f"the page is {width}px wide in a {page.viewport_size}; past its edge: {wider}")


async def shot(page: Page, name: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    await page.screenshot(path=str(SCREENSHOTS / f"{name}.png"), full_page=True)


async def log_in_by_keyboard(page: Page, email: str) -> None:
    await page.get_by_label("E-mail").focus()  # the field has autofocus; typing starts there
    await page.keyboard.type(email)
    await page.keyboard.press("Tab")
    await page.keyboard.type(PASSWORD)
    await page.keyboard.press("Enter")


async def set_password_and_log_in(
    page: Page, live: LiveStack, org_id: str, email: str, role: MemberRole
) -> None:
    """A new member of ``org_id`` sets a password from the invitation and logs in."""
    await page.goto(invite(live, org_id, email, role))
    await page.get_by_label("New password").fill(PASSWORD)
    await page.get_by_label("The same password again").fill(PASSWORD)
    await page.get_by_role("button", name="Save the password").click()
    await page.get_by_label("E-mail").fill(email)
    await page.get_by_label("Password", exact=True).fill(PASSWORD)
    await page.get_by_role("button", name="Log in").click()
    await page.get_by_role("heading", name="Overview").wait_for()
