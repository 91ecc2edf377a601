"""Who does an operation: every service function takes an ``Actor``, and every audit record it
writes names it (``str(actor)``: ``apiKey:<keyId>``, ``member:<id>``, ``staff:<id>``,
``operator:<name>``, ``subject:<id>``, ``provider:<name>``, ``organization``, ``temporal``,
``system``)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class ActorKind(StrEnum):
    API_KEY = "apiKey"  # an integrator's signed call
    MEMBER = "member"  # a member of the organization, in the dashboard
    # an operator (the platform's own people) in the dashboard's operators' area; stored as
    # ``staff:<memberId>`` in records already signed, so the value keeps its first name
    DASHBOARD_OPERATOR = "staff"
    SHELL_OPERATOR = "operator"  # an operator with a shell on the server: the ``mandatum`` command
    SUBJECT = "subject"  # the person asked, on the approval pages
    ORGANIZATION = "organization"  # the organization's own identity report
    PROVIDER = "provider"  # an identity provider reporting a check (``provider:development``)
    TEMPORAL = "temporal"  # the request's workflow, on its own (expiry, an operator's cancel in Temporal)
    SYSTEM = "system"  # the service itself (the reconciler, purges)


_NEEDS_ID = {
    ActorKind.API_KEY,
    ActorKind.MEMBER,
    ActorKind.DASHBOARD_OPERATOR,
    ActorKind.SHELL_OPERATOR,
    ActorKind.SUBJECT,
    ActorKind.PROVIDER,
}


@dataclass(frozen=True)
class Actor:
    kind: ActorKind
    id: str | None = None

    def __post_init__(self) -> None:
        if (self.kind in _NEEDS_ID) != bool(self.id):
            raise ValueError(
                f"an actor of kind {self.kind} {'needs' if self.kind in _NEEDS_ID else 'takes no'} id"
            )
        if self.id is not None and (len(self.id) > 200 or not self.id.isprintable() or ":" in self.id):
            raise ValueError("an actor id is at most 200 printable characters without ':'")

    def __str__(self) -> str:
        return f"{self.kind}:{self.id}" if self.id else str(self.kind)

    @classmethod
    def api_key(cls, key_id: str) -> Actor:
        return cls(ActorKind.API_KEY, key_id)

    @classmethod
    def member(cls, member_id: str) -> Actor:
        return cls(ActorKind.MEMBER, member_id)

    @classmethod
    def dashboard_operator(cls, member_id: str) -> Actor:
        return cls(ActorKind.DASHBOARD_OPERATOR, member_id)

    @classmethod
    def subject(cls, subject_id: str) -> Actor:
        return cls(ActorKind.SUBJECT, subject_id)

    @classmethod
    def shell_operator(cls, name: str) -> Actor:
        return cls(ActorKind.SHELL_OPERATOR, name)

    @classmethod
    def parse(cls, text: str) -> Actor:
        """The actor a stored ``str(actor)`` names (ValueError when it names none)."""
        kind, _, rest = text.partition(":")
        return cls(ActorKind(kind), rest or None)


TEMPORAL = Actor(ActorKind.TEMPORAL)
SYSTEM = Actor(ActorKind.SYSTEM)
ORGANIZATION = Actor(ActorKind.ORGANIZATION)
