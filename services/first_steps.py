"""The first steps of an organization, as the dashboard's overview lists them: each ticked when
done, with the page where it is done (issue 34)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from core.kinds import MemberRole
from services.context import Context
from store import first_steps as store


@dataclass(frozen=True)
class Step:
    title: str
    done: bool
    href: str  # where it is done
    hint: str
    builders_only: bool = False  # its page is for owners and developers (support reads no keys)

    def linked_for(self, role: str) -> bool:
        """Whether a member of ``role`` may open the step's page."""
        return not self.builders_only or role in (MemberRole.OWNER, MemberRole.DEVELOPER)


async def first_steps(ctx: Context, org_id: str) -> list[Step]:
    found = await asyncio.to_thread(store.done, ctx.engine, org_id)
    return [
        Step("Create an API key", found.key, "/dashboard/keys", "every call is signed with a key", True),
        Step(
            "Set a webhook and send it a test event",
            found.webhook_tested,
            "/dashboard/webhooks",
            "decisions and revocations reach you as signed events",
            True,
        ),
        Step(
            "Publish an action",
            found.action_published,
            "/dashboard/actions",
            "what a mandate allows: the params and the rules that compare them",
            True,
        ),
        Step("Send your first request", found.first_request, "/docs", "POST /request, from the API docs"),
        Step(
            "Get your first mandate",
            found.first_mandate,
            "/dashboard/mandates",
            "a person approved: the signed credential your agent presents",
        ),
    ]
