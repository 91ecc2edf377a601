"""A cancel that reaches a running activity (its request closed, its start-to-close timeout ran
out, the worker is shutting down) never lands inside a database transaction.

The SDK delivers a cancel to a synchronous activity by raising ``CancelledError`` inside its thread
at whatever line it is running, unless the activity is defined with ``no_thread_cancel_exception``.
Raised between sending a statement and reading its answer, it leaves a PostgreSQL connection with
a command in progress: the write is lost and the connection can no longer be rolled back or reused.
Every activity of the worker opts out: it finishes its transaction (each is short, idempotent and
bounded by its own timeouts), and the cancel is reported after.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from sqlalchemy import Engine, select, text
from sqlmodel import col
from temporalio import activity
from temporalio.testing import ActivityEnvironment

from activities.webhooks import WebhookActivities
from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import webhooks
from services.context import Context
from store import webhooks as store
from store.tables import WebhookEvent
from tests.support.api_client import Credentials
from worker import worker_activities
from workflows.webhook_messages import RecordWebhookFailureInput

LOCK_WAITS = text(
    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
    "AND wait_event_type = 'Lock' AND query ILIKE '%FROM webhook_event%FOR UPDATE%'"
)


def test_every_activity_of_the_worker_finishes_its_work_before_a_cancel(
    engine: Engine, settings: Settings
) -> None:
    defined = [activity._Definition.must_from_callable(fn) for fn in worker_activities(engine, settings)]
    # with send_link, check_trusted_session; reopen_failed_credential, restart_identity_check (issue 32);
    # write_subject_decision (revision 3)
    assert len({d.name for d in defined}) == len(defined) == 18
    assert [d.name for d in defined if not d.no_thread_cancel_exception] == []


def _wait_for(condition: Any, what: str, seconds: float = 20) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_a_cancel_waits_for_the_transaction_under_way(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    if engine.dialect.name != "postgresql":
        pytest.skip("holds a PostgreSQL row lock to stop the activity inside its transaction")
    ctx = Context(settings, engine, cipher, None)  # no Temporal needed
    event = webhooks.create_test_event(ctx, Actor.shell_operator("tester"), org.organization_id)
    acts = WebhookActivities(engine, cipher, settings)
    env = ActivityEnvironment()
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            env.run(acts.record_webhook_failure, RecordWebhookFailureInput(event_id=event.id, reason="gone"))
            outcome["done"] = True
        except BaseException as exc:
            outcome["error"] = exc

    checked_out = engine.pool.checkedout()  # type: ignore[attr-defined]
    with engine.connect() as holder:
        held = holder.begin()
        holder.execute(select(col(WebhookEvent.id)).where(col(WebhookEvent.id) == event.id).with_for_update())
        runner = threading.Thread(target=run)
        runner.start()
        # the activity's transaction has begun and waits for the row: the cancel arrives inside it
        _wait_for(lambda: _waiting(engine), "the activity to wait for the row")
        env.cancel()
        held.commit()
    runner.join(timeout=30)
    assert not runner.is_alive()
    assert outcome == {"done": True}
    assert store.get_event(engine, event.id).state == store.FAILED
    assert engine.pool.checkedout() == checked_out  # type: ignore[attr-defined]  # none left in use


def _waiting(engine: Engine) -> bool:
    with engine.connect() as conn:
        return bool(conn.execute(LOCK_WAITS).scalar_one())
