"""What an organization has done of its first steps (the dashboard's overview), each one
query reading at most one row of the organization's own."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from store.db import read_session
from store.tables import (
    ActionVersion,
    ApiKey,
    Credential,
    CredentialRequest,
    WebhookEvent,
)

PUBLISHED = "published"
DELIVERED = "delivered"


@dataclass(frozen=True)
class Done:
    key: bool  # an API key that can sign (not revoked)
    webhook_tested: bool  # a test event reached the webhook
    action_published: bool
    first_request: bool
    first_mandate: bool


def _any(session: Session, query: Any) -> bool:
    """Whether ``query`` finds a row (the first one only is read)."""
    return session.exec(query.limit(1)).first() is not None


def done(engine: Engine, org_id: str) -> Done:
    with read_session(engine) as session:
        return Done(
            key=_any(
                session,
                select(ApiKey.id).where(ApiKey.organization_id == org_id, col(ApiKey.revoked_at).is_(None)),
            ),
            webhook_tested=_any(
                session,
                select(WebhookEvent.id).where(
                    WebhookEvent.organization_id == org_id,
                    WebhookEvent.event_type == "test",
                    WebhookEvent.state == DELIVERED,
                ),
            ),
            action_published=_any(
                session,
                select(ActionVersion.id).where(
                    ActionVersion.organization_id == org_id, ActionVersion.status == PUBLISHED
                ),
            ),
            first_request=_any(
                session, select(CredentialRequest.id).where(CredentialRequest.organization_id == org_id)
            ),
            first_mandate=_any(
                session,
                select(Credential.id)
                .join(CredentialRequest, col(CredentialRequest.id) == col(Credential.request_id))
                .where(CredentialRequest.organization_id == org_id, col(Credential.mandate_id).is_not(None)),
            ),
        )
