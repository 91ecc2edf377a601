"""The request workflow's ``workflow.patched`` ids, in one place: each guards a change made while
workflows were running, so histories recorded before it replay without it. An id is never reused
and never removed while a history recorded before it may still replay.
"""

from __future__ import annotations

ISSUANCE_PATCH = "issue-on-acceptance"
WEBHOOK_PATCH = "webhook-events"
JOURNEY_PATCH = "subject-journey"
TEMPORAL_CANCEL_PATCH = "temporal-cancel"
QUIET_CANCEL_PATCH = "canceled-send-not-undeliverable"
ISSUANCE_FAILURE_PATCH = "issuance-failure-ends"
OUTCOME_PATCH = "outcome-search-attribute"  # MandatumOutcome and the deliveries' search attributes
# a decision's issuance and event as local activities (workflows.options.write)
LOCAL_DECISION_PATCH = "decision-writes-local"
