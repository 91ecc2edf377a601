"""A request workflow's typed search attributes, and the business outcome they carry once the
request is closed (``MandatumOutcome``). Deterministic code only: the workflow uses both, and
``orchestration.temporal`` sets the first ones when it starts the workflow.
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.common import SearchAttributePair

with workflow.unsafe.imports_passed_through():
    from core.kinds import RequestOutcome, RequestStatus
    from workflows.ids import SA_INTERNAL_ID, SA_ORGANIZATION, SA_OUTCOME, SA_SECURITY_LEVEL, SA_STATUS
    from workflows.messages import CredentialRequestInput


def search_attributes_for(
    inp: CredentialRequestInput, status: str, outcome: str | None = None
) -> list[SearchAttributePair[str]]:
    """The typed search attributes of a request workflow, at start and after each change (the
    outcome once it is closed)."""
    pairs = [
        SearchAttributePair(SA_ORGANIZATION, inp.organization_id),
        SearchAttributePair(SA_STATUS, status),
        SearchAttributePair(SA_SECURITY_LEVEL, inp.security_level),
    ]
    if inp.internal_id:
        pairs.append(SearchAttributePair(SA_INTERNAL_ID, inp.internal_id))
    if outcome:
        pairs.append(SearchAttributePair(SA_OUTCOME, outcome))
    return pairs


def outcome_of(status: str, decisions: list[bool], identity_failed: bool) -> RequestOutcome | None:
    """A request's business outcome from its status, its decisions (accepted or not) and whether a
    subject's identity check failed; None while it is pending."""
    if status == RequestStatus.CANCELED:
        return RequestOutcome.CANCELED
    if status == RequestStatus.EXPIRED:
        return RequestOutcome.EXPIRED
    if status != RequestStatus.COMPLETED:
        return None
    if identity_failed:
        return RequestOutcome.IDENTITY_FAILED
    if all(decisions):
        return RequestOutcome.APPROVED
    return RequestOutcome.PARTLY_APPROVED if any(decisions) else RequestOutcome.REJECTED
