"""Several webhook endpoints of one organization (issue 34), on the live stack: each endpoint gets
its own copy of every event, under its own event id, signed and encrypted with its own secrets
(checked here as a receiver holding only that endpoint's secrets would), in the order CONTRACT 7
gives within a request (``identity`` before ``credential``); an endpoint turned off gets nothing
and its events say why; a removed endpoint's deliveries still to come are skipped."""

from __future__ import annotations

from typing import Any

from core.actors import Actor
from core.secretbox import SecretCipher
from orchestration.webhooks import start_delivery
from services import webhooks
from services.context import Context
from store import webhooks as store
from tests.support.live_stack import LiveStack
from tests.support.sdk import create_request, decide, message_to, new_contact, raw, until
from tests.support.webhook_receiver import Delivery, Receiver, decrypt, receiving, signature_ok
from tests.support.webhooks import LOCAL, configure

OWNER = Actor.member("6b0a00000000000000000007")


def _ctx(live: LiveStack) -> Context:
    return Context(live.settings, live.engine, SecretCipher(live.settings.master_key_bytes()), live.temporal)


def _add(ctx: Context, org_id: str, url: str, monkeypatch: Any) -> webhooks.Configured:
    # the live stack's receivers listen on 127.0.0.1 over http: allowed in tests only
    monkeypatch.setattr(webhooks.EgressPolicy, "of", staticmethod(lambda _settings: LOCAL))
    return webhooks.add_endpoint(ctx, OWNER, org_id, url, "second receiver")


def _opened(hook: Delivery, secrets: dict[str, str]) -> dict[str, Any]:
    """The event as a receiver holding only these secrets reads it: signature, then decryption."""
    assert signature_ok(
        hook.raw_body, hook.headers["X-Timestamp"], hook.headers["X-Signature"], secrets["signature secret"]
    )
    event, _ = decrypt(hook.raw_body, secrets["encryption secret"], secrets["salt"])
    assert event["id"] == hook.webhook_id
    return event


async def test_each_endpoint_gets_its_own_copy_in_order_with_its_own_secrets(
    live: LiveStack, monkeypatch: Any
) -> None:
    ctx = _ctx(live)
    creds = live.new_org()
    org_id = creds.organization_id
    with (
        receiving(lambda _: 204) as first,
        receiving(lambda _: 204) as second,
        receiving(lambda _: 204) as off,
    ):
        configure(live.engine, ctx.cipher, org_id, first)  # the oldest: the test receiver's secrets
        added = _add(ctx, org_id, second.url, monkeypatch)
        silent = _add(ctx, org_id, off.url, monkeypatch)
        webhooks.set_delivery(ctx, OWNER, org_id, False, None, silent.endpoint_id)
        assert set(added.generated) == {"signature secret", "encryption secret", "salt"}

        contact = new_contact("endpoints")
        request = await create_request(live, creds, contacts=[contact], securityLevel="ORGANIZATION_KYC")
        await message_to(live, contact)
        reported = await raw(live, creds, "POST", "/subject/identity", {"contact": contact, "success": True})
        assert reported.status_code == 200, reported.text
        await decide(live, request, contact, accept=True)

        def two(receiver: Receiver) -> list[Delivery]:
            with receiver.lock:
                return list(receiver.deliveries) if len(receiver.deliveries) >= 2 else []

        to_first = await until(lambda: two(first), "identity and credential at the first endpoint")
        to_second = await until(lambda: two(second), "identity and credential at the second endpoint")

    # each in the contract's order, the second read with its own secrets only
    assert [d.event["eventType"] for d in to_first if d.event] == ["identity", "credential"]
    assert all(d.signature_ok for d in to_first)
    second_events = [_opened(d, added.generated) for d in to_second]
    assert [e["eventType"] for e in second_events] == ["identity", "credential"]
    assert not any(d.signature_ok for d in to_second)  # not signed with the first endpoint's secret
    # the same facts under different event ids; the payloads agree but for the id
    assert {d.webhook_id for d in to_first}.isdisjoint(d.webhook_id for d in to_second)
    for one, other in zip(to_first, second_events, strict=True):
        assert one.event is not None and one.event["requestId"] == other["requestId"] == request["id"]
        assert {**one.event, "id": ""} == {**other, "id": ""}
    assert off.count() == 0

    # the endpoint turned off has its copies, skipped with the reason (once its deliveries ran)
    def settled() -> list[Any]:
        found = store.list_events(live.engine, org_id, 50, request["id"], silent.endpoint_id)
        return found if len(found) == 2 and all(e.state != store.PENDING for e in found) else []

    skipped = await until(settled, "the copies of the endpoint turned off settled")
    assert sorted(e.event_type for e in skipped) == ["credential", "identity"]
    assert {(e.state, e.last_error) for e in skipped} == {("skipped", "the webhook is turned off")}
    assert len(store.list_events(live.engine, org_id, 50, request["id"])) == 6


async def test_a_removed_endpoints_events_are_skipped_and_a_fact_is_made_once_per_endpoint(
    live: LiveStack, monkeypatch: Any
) -> None:
    ctx = _ctx(live)
    org_id = live.new_org().organization_id
    fact = f"test:endpoints-{org_id}"
    with receiving(lambda _: 204) as first, receiving(lambda _: 204) as second:
        configure(live.engine, ctx.cipher, org_id, first)
        added = _add(ctx, org_id, second.url, monkeypatch)

        def make() -> list[tuple[Any, bool]]:
            return store.create_events(
                live.engine, org_id, fact, "test", None, lambda i, at: {"id": i, "n": 1}
            )

        made = make()
        assert [created for _, created in made] == [True, True]
        oldest = store.config_row(live.engine, org_id)
        assert oldest is not None
        assert [(e.endpoint_id, e.fact_key) for e, _ in made] == [
            (oldest.id, fact),
            (added.endpoint_id, f"{fact}@{added.endpoint_id}"),
        ]
        again = make()  # a retried activity: the same events, none new
        assert [(e.id, created) for e, created in again] == [(e.id, False) for e, _ in made]

        webhooks.remove_endpoint(ctx, OWNER, org_id, added.endpoint_id)
        assert [e.id for e in webhooks.endpoints(ctx, org_id)] == [oldest.id]
        for event, _ in made:
            await start_delivery(live.temporal, live.settings.task_queue, event)

        def settled() -> list[Any]:
            found = [store.get_event(live.engine, e.id) for e, _ in made]
            return found if all(e.state != store.PENDING for e in found) else []

        delivered, removed = await until(settled, "both deliveries settled")
    assert delivered.state == "delivered" and first.count() == 1 and second.count() == 0
    assert (removed.state, removed.last_error) == ("skipped", "the webhook endpoint was removed")
