"""The second factor from a test's side: turned on through the service at a moment of the test's
choosing, or through the pages as a member does; the recovery codes read from the page that shows
them once; a fresh code without racing the clock (the steps used so far are forgotten, as time
passing would)."""

from __future__ import annotations

import re
from datetime import datetime, timedelta

import httpx
import pyotp
from sqlalchemy import Engine, update
from sqlmodel import col

from services.context import Context
from store.db import utcnow, write_session
from store.tables import Member
from tests.support.dashboard import PASSWORD, client_address

ENROL = "/dashboard/account/second-factor"
SECRET_RE = re.compile(r'id="totp-secret">([A-Z2-7]{32})<')
CODES_RE = re.compile(r"<li><code>([A-Z2-7]{4}(?:-[A-Z2-7]{4}){3})</code></li>")


async def factor_on(
    ctx: Context, member: Member, at: datetime | None = None, password: str = PASSWORD
) -> tuple[pyotp.TOTP, list[str]]:
    """The member's factor turned on through the service at ``at`` (five minutes ago unless given,
    so that the codes of now are unused): their app and their ten recovery codes."""
    from services import second_factor  # here: the pages' helpers below work on any version

    at = at or utcnow() - timedelta(minutes=5)
    client = client_address()
    enrolment = await second_factor.begin(ctx, member, second_factor.Proof(password, "", client), at)
    totp = pyotp.TOTP(enrolment.secret)
    codes = second_factor.confirm(ctx, member, totp.at(at), client, at)
    return totp, codes


async def factor_on_by_pages(browser: httpx.AsyncClient, csrf: str) -> tuple[pyotp.TOTP, list[str], str]:
    """The logged-in member of ``browser`` sets up the factor with their password and the app's
    first code: their app, their recovery codes, and the page that showed them."""
    begun = await browser.post(ENROL, data={"csrf": csrf, "change": "set-up", "password": PASSWORD})
    assert begun.status_code == 200, begun.text
    found = SECRET_RE.search(begun.text)
    assert found is not None, begun.text
    totp = pyotp.TOTP(found.group(1))
    shown = await browser.post(f"{ENROL}/confirm", data={"csrf": csrf, "code": totp.now()})
    assert shown.status_code == 200, shown.text
    codes = CODES_RE.findall(shown.text)
    assert len(codes) == 10, shown.text
    return totp, codes, shown.text


def fresh_code(engine: Engine, member_id: str, totp: pyotp.TOTP) -> str:
    """A code of now that is unused: the steps used so far are forgotten, as time passing would
    make them past (a code of the current step, checked a moment later, is within the drift)."""
    with write_session(engine) as session:
        session.execute(update(Member).where(col(Member.id) == member_id).values(totp_last_step=None))
    return totp.now()
