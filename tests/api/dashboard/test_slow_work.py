"""Nothing slow on the event loop (issue 30, item 2): a login's Argon2id check, a password set
from a link, and the audit chain's check run on threads of their own while the loop keeps
answering (a probe coroutine ticks while each runs), a link nobody was sent costs no hash, and
when the threads and their queues are full the answer is 503 with ``Retry-After``.
On SQLite ``store.db.run_db`` runs its call on the loop itself, so these ran there before."""

from __future__ import annotations

import asyncio
import secrets
import threading
from collections.abc import AsyncIterator

import httpx
import pytest
import pytest_asyncio
from argon2 import PasswordHasher

from api.app import create_app
from core.bounded import BoundedPool
from core.kinds import MemberRole
from core.settings import Settings
from services import audit as audit_service
from services import passwords
from services.context import Context
from store import audit
from tests.support.api_client import Credentials
from tests.support.dashboard import PASSWORD, invitation, log_in_as, page_client
from tests.support.loop_probe import loop_probe


@pytest_asyncio.fixture
async def browser(settings: Settings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(settings)
    async with page_client(app) as client:
        yield client
    app.state.ctx.engine.dispose()


async def _member(ctx: Context, org: Credentials, browser: httpx.AsyncClient, email: str) -> None:
    path, _ = invitation(ctx, org, email)
    assert (await browser.post(path, data={"password": PASSWORD, "again": PASSWORD})).status_code == 303


async def test_a_login_is_checked_off_the_event_loop(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    email = f"hashed-{org.organization_id}@example.com"
    await _member(ctx, org, browser, email)
    async with loop_probe() as probe:
        monkeypatch.setattr(PasswordHasher, "verify", probe.wrap(PasswordHasher.verify))
        right = await browser.post("/dashboard/login", data={"email": email, "password": PASSWORD})
        unknown = await browser.post("/dashboard/login", data={"email": "x" + email, "password": PASSWORD})
    assert (right.status_code, unknown.status_code) == (303, 401)
    assert len(probe.calls) == 2  # the member's hash, and the stand-in for an unknown address
    assert probe.off_the_loop(), probe.calls


async def test_an_unknown_link_costs_no_hash_and_a_known_one_is_hashed_off_the_loop(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    path, _ = invitation(ctx, org, f"linked-{org.organization_id}@example.com")
    chosen = {"password": PASSWORD, "again": PASSWORD}
    async with loop_probe() as probe:
        monkeypatch.setattr(PasswordHasher, "hash", probe.wrap(PasswordHasher.hash))
        for kind in ("set-password", "reset-password"):
            made_up = await browser.post(f"/dashboard/{kind}/{secrets.token_urlsafe(32)}", data=chosen)
            assert made_up.status_code == 400 and "unknown, used or expired" in made_up.text
            assert probe.calls == [], kind  # looked up before any hash
        done = await browser.post(path, data=chosen)
    assert done.status_code == 303
    assert len(probe.calls) == 1 and probe.off_the_loop(), probe.calls


async def test_the_chain_check_runs_off_the_event_loop(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    invitation(ctx, org, f"second-{org.organization_id}@example.com")  # a second record in the chain
    _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "checker")
    async with loop_probe() as probe:
        monkeypatch.setattr(audit, "check_record", probe.wrap(audit.check_record))
        checked = await browser.post("/dashboard/activity/check", data={"csrf": csrf})
    assert checked.status_code == 200 and "The chain checks" in checked.text
    assert len(probe.calls) >= 2 and probe.off_the_loop(), probe.calls  # every record, off the loop


async def _held(pool: BoundedPool, release: threading.Event) -> asyncio.Task[bool]:
    """Every place of ``pool`` taken by work that waits for ``release``."""
    held = [asyncio.create_task(pool.run(release.wait, 30)) for _ in range(pool.workers + pool.waiting)]
    await asyncio.sleep(0)
    return held[0]


async def test_a_login_while_every_hashing_thread_is_busy_is_told_to_come_back(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    email = f"busy-{org.organization_id}@example.com"
    await _member(ctx, org, browser, email)
    full, release = BoundedPool("argon2-full", workers=1, waiting=0), threading.Event()
    holding = await _held(full, release)
    monkeypatch.setattr(passwords, "HASHING", full)
    busy = await browser.post("/dashboard/login", data={"email": email, "password": PASSWORD})
    assert busy.status_code == 503 and busy.headers["retry-after"] == str(passwords.BUSY_RETRY_SECONDS)
    assert "busy" in busy.text and "set-cookie" not in busy.headers
    release.set()
    await holding
    assert (
        await browser.post("/dashboard/login", data={"email": email, "password": PASSWORD})
    ).status_code == 303


async def test_a_chain_check_while_others_fill_the_checking_thread_is_told_to_come_back(
    ctx: Context, org: Credentials, browser: httpx.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, csrf = await log_in_as(browser, ctx, org, MemberRole.SUPPORT, "impatient")
    full, release = BoundedPool("audit-check-full", workers=1, waiting=0), threading.Event()
    holding = await _held(full, release)
    monkeypatch.setattr(audit_service, "CHECKS", full)
    busy = await browser.post("/dashboard/activity/check", data={"csrf": csrf})
    assert busy.status_code == 503 and busy.headers["retry-after"] == str(audit_service.CHECK_RETRY_SECONDS)
    assert "Other chain checks are running" in busy.text and "The chain checks" not in busy.text
    release.set()
    await holding
    assert "The chain checks" in (await browser.post("/dashboard/activity/check", data={"csrf": csrf})).text
