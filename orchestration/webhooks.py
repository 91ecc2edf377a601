"""Starting webhook deliveries from outside a workflow (``mandatum webhook test`` and ``retry``)."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from store.tables import WebhookEvent
from workflows.ids import webhook_search_attributes, webhook_workflow_id
from workflows.webhook_delivery import WebhookDeliveryWorkflow
from workflows.webhook_messages import DELIVERY_REVISION, DeliverWebhookInput


async def start_delivery(
    client: Client, task_queue: str, event: WebhookEvent, resend: int | None = None
) -> str:
    """Start ``webhook:<eventId>``; the id may be used again only after a failed delivery, so a
    retry re-delivers a failed event and can never send a delivered one twice (raises
    WorkflowAlreadyStartedError when it runs or was delivered). A delivered event is sent again
    only when someone asks for it (``resend``: the number of attempts so far, unique per resend),
    as ``webhook:<eventId>:resend-<n>``. The workflow carries the event's organization, request
    and type as search attributes."""
    handle = await client.start_workflow(
        WebhookDeliveryWorkflow.run,
        DeliverWebhookInput(event_id=event.id, revision=DELIVERY_REVISION),
        id=webhook_workflow_id(event.id) + (f":resend-{resend}" if resend is not None else ""),
        task_queue=task_queue,
        id_reuse_policy=WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        static_summary=f"Webhook event {event.id}",
        search_attributes=webhook_search_attributes(
            event.organization_id, event.request_id, event.event_type
        ),
    )
    return handle.id


async def ended(client: Client, event_id: str, within: float) -> bool:
    """Whether the delivery run of ``webhook:<eventId>`` ends (however) within ``within`` seconds:
    a failed run records FAILED just before it ends, so a retry asked for in between waits for it."""
    try:
        await asyncio.wait_for(client.get_workflow_handle(webhook_workflow_id(event_id)).result(), within)
    except TimeoutError:
        return False
    except Exception:  # it ended failed, or is gone: either way it no longer runs
        return True
    return True


async def start_made(
    client: Client, task_queue: str, make: Callable[[], list[WebhookEvent]], log: logging.Logger, what: str
) -> None:
    """Make the events after the commit of what they report (``make``, on a thread: one per
    endpoint, none when there is nothing to report) and start their deliveries; a delivery
    already started is left as it is, and any other failure is logged as ``what`` waiting for the
    worker's pass, which makes it."""
    try:
        made = await asyncio.to_thread(make)
    except Exception:
        log.exception("%s waits for the worker", what)
        return
    for event in made:
        try:
            await start_delivery(client, task_queue, event)
        except WorkflowAlreadyStartedError:
            pass
        except Exception:
            log.exception("%s waits for the worker", what)


async def every_interval(
    seconds: float, once: Callable[[], Awaitable[object]], log: logging.Logger, what: str
) -> None:
    """The worker's pass: ``once`` every ``seconds``, a failure logged (as ``what``) and tried again."""
    while True:
        try:
            await once()
        except Exception:
            log.exception("the pass over %s failed; trying again", what)
        await asyncio.sleep(seconds)
