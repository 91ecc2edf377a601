"""orchestration.health, the readiness checks of the API and the worker: a reason is one short line
that never shows a password, a database error speaks through its driver, and each check is bounded
without starting a thread per hung one. (``/readyz`` itself: tests/api/test_health.py.)"""

from __future__ import annotations

import asyncio
import threading
from functools import partial

import pytest
from sqlalchemy import create_engine
from sqlalchemy.exc import OperationalError
from temporalio.service import RPCError, RPCStatusCode

from orchestration import health
from orchestration.health import NotReady, check_all, in_own_thread, short_reason

PASSWORD = "s3cr=t/Pa55"  # URL-special characters: percent-encoded in the URL, plain in the driver


def test_a_reason_is_one_short_line_without_credentials() -> None:
    url = f"postgresql+psycopg://leaky_user:{PASSWORD}@db.example:5432/mandatum"
    reason = short_reason(RuntimeError(f"cannot reach {url}\n  at line 2\nTraceback (most recent call last)"))
    assert reason == "RuntimeError: cannot reach postgresql+psycopg://***@db.example:5432/mandatum"
    conninfo = short_reason(ValueError("host=db user=u password=hunter2 dbname=x token: 'abc def'"))
    assert "hunter2" not in conninfo and "abc" not in conninfo and conninfo.startswith("ValueError: host=db")
    named = short_reason(RuntimeError(f"auth failed for {PASSWORD} (sent as s3cr%3Dt%2FPa55)"), [PASSWORD])
    assert named == "RuntimeError: auth failed for *** (sent as ***)"
    long = short_reason(RuntimeError("x" * 500))
    assert len(long) == health.REASON_LIMIT and long.endswith("\u2026")
    assert short_reason(TimeoutError()) == "TimeoutError"


def test_a_database_error_speaks_through_its_driver() -> None:
    engine = create_engine(f"postgresql+psycopg://leaky_user:{PASSWORD}@127.0.0.1:1/nowhere")
    try:
        with pytest.raises(OperationalError) as raised:
            engine.connect()
    finally:
        engine.dispose()
    reason = short_reason(raised.value, [PASSWORD])
    assert reason.startswith("OperationalError: connection failed"), reason
    assert "psycopg" not in reason and "sqlalche.me" not in reason and PASSWORD not in reason


async def test_each_check_is_bounded_and_hung_ones_start_no_more_threads() -> None:
    release = threading.Event()

    async def hangs() -> None:
        await asyncio.Event().wait()

    async def blocks() -> None:
        await in_own_thread(release.wait)

    async def refuses() -> None:
        raise NotReady("not serving: said so")

    async def fine() -> None:
        return None

    try:
        outcome = await check_all(
            {"hangs": hangs, "blocks": blocks, "refuses": refuses, "fine": fine}, within=0.05
        )
        assert outcome.checks == {
            "hangs": "unreachable: no answer within 0.05 s",
            "blocks": "unreachable: no answer within 0.05 s",
            "refuses": "not serving: said so",
            "fine": "ok",
        }
        assert not outcome.ready and outcome.body()["status"] == "not ready"
        # one thread still blocked: at most MAX_WAITING run at once, the others wait for a slot
        # (and here time out) without starting a thread
        more = await check_all({f"b{i}": blocks for i in range(health.MAX_WAITING + 2)}, within=0.05)
        assert set(more.checks.values()) == {"unreachable: no answer within 0.05 s"}
        assert len(_readiness_threads()) == health.MAX_WAITING
    finally:
        release.set()
        for thread in _readiness_threads():
            thread.join(5)
    assert (await check_all({"blocks": blocks}, within=1)).ready  # the slots are free again


def _readiness_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "mandatum-readiness" and t.is_alive()]


class _Frontend:
    """A client whose health check answers from ``answers`` in turn (an error is raised)."""

    def __init__(self, *answers: bool | RPCError) -> None:
        self.answers, self.calls = list(answers), 0
        self.service_client = self

    async def check_health(self, **_: object) -> bool:  # the timeout, which the probe also bounds
        self.calls += 1
        answer = self.answers.pop(0)
        if isinstance(answer, RPCError):
            raise answer
        return answer


def _rpc(status: RPCStatusCode) -> RPCError:
    return RPCError("operation was canceled", status, b"")


@pytest.mark.parametrize(
    ("answers", "outcome", "calls"),
    [
        ((True,), "ok", 1),
        ((_rpc(RPCStatusCode.CANCELLED), True), "ok", 2),  # one dropped call: asked again
        ((_rpc(RPCStatusCode.CANCELLED), _rpc(RPCStatusCode.CANCELLED)), "unreachable: RPCError", 2),
        ((_rpc(RPCStatusCode.UNAVAILABLE),), "unreachable: RPCError", 1),  # down: said at once
        ((False,), "not serving", 1),
    ],
)
async def test_a_temporal_call_the_server_dropped_is_asked_once_more(
    answers: tuple[bool | RPCError, ...], outcome: str, calls: int
) -> None:
    frontend = _Frontend(*answers)
    readiness = await check_all({"temporal": partial(health.temporal_serving, frontend)})  # type: ignore[arg-type]
    assert readiness.checks["temporal"].startswith(outcome), readiness.checks
    assert frontend.calls == calls
