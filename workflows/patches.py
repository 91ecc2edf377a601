"""The request workflow's ``workflow.patched`` ids, in one place, and the revision that makes them
free (ADR 23).

Each id guards a change made while workflows were running, so histories recorded before it replay
without it. An id is never reused and never removed while a history recorded before it may still
replay.

A patch costs every workflow that meets it a marker and an upsert of Temporal's
``TemporalChangeVersion`` search attribute, in its history, for good. A request started with
``CredentialRequestInput.revision`` >= 1 takes every patch of ``IN_REVISION_1`` as present without
asking Temporal (no marker, no upsert): its input, which is in its history, says it was started on
code that has them all, so its replay takes the same path. Requests started before (revision 0)
still ask, and replay as recorded. A patch added later is asked for at every revision below the
one that first includes it.
"""

from __future__ import annotations

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from workflows.messages import CredentialRequestInput

ISSUANCE_PATCH = "issue-on-acceptance"
WEBHOOK_PATCH = "webhook-events"
JOURNEY_PATCH = "subject-journey"
TEMPORAL_CANCEL_PATCH = "temporal-cancel"
QUIET_CANCEL_PATCH = "canceled-send-not-undeliverable"
ISSUANCE_FAILURE_PATCH = "issuance-failure-ends"
OUTCOME_PATCH = "outcome-search-attribute"  # MandatumOutcome and the deliveries' search attributes
# a decision's issuance and event as local activities (workflows.options.write)
LOCAL_DECISION_PATCH = "decision-writes-local"

# revision 1 (2026-11-28): every patch above is in, and a decision's update answers without waiting
# for its deliveries' starts (ADR 23)
IN_REVISION_1 = frozenset(
    {
        ISSUANCE_PATCH,
        WEBHOOK_PATCH,
        JOURNEY_PATCH,
        TEMPORAL_CANCEL_PATCH,
        QUIET_CANCEL_PATCH,
        ISSUANCE_FAILURE_PATCH,
        OUTCOME_PATCH,
        LOCAL_DECISION_PATCH,
    }
)
# revision 2 (2026-11-28, ADR 24): a decision's record is a local activity in its update's task,
# answered with the decision stored, and each credential event's first attempt is an activity of
# the request's workflow (its delivery workflow starts only for the retries)
LOCAL_RECORD_REVISION = 2
# revision 3 (2026-11-28, ADR 27): a decision's record, issuance and credential event in one local
# activity (workflows.decision_writes)
ONE_WRITE_REVISION = 3
# the revision new requests start on (orchestration.temporal.workflow_input)
CURRENT_REVISION = 3


def has(revision: int, patch_id: str) -> bool:
    """``workflow.patched(patch_id)`` for a request started on ``revision``: True without a marker
    when that revision includes the patch."""
    if revision >= 1 and patch_id in IN_REVISION_1:
        return True
    return workflow.patched(patch_id)


class UnknownRevision(RuntimeError):
    """A request started by newer code than this worker's. Not an ``ApplicationError``: it fails
    the workflow task, not the workflow, and Temporal retries the task until a worker that knows
    the revision takes it."""


def refuse_unknown_revision(inp: CredentialRequestInput) -> None:
    """Upgrade the workers before the API (docs/operations.md): a worker that ran a request of a
    revision it does not know would record its own older path under that revision, which the newer
    code could not replay."""
    if inp.revision > CURRENT_REVISION:
        raise UnknownRevision(
            f"request {inp.request_id} was started on workflow revision {inp.revision}; "
            f"this worker knows revisions up to {CURRENT_REVISION}: upgrade it"
        )
