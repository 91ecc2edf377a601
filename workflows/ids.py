"""Workflow ids, typed search attributes and activity names shared by callers and workers."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributePair, TypedSearchAttributes

REQUEST_WORKFLOW_PREFIX = "credential-request:"
WEBHOOK_WORKFLOW_PREFIX = "webhook:"
CREDENTIAL_RETRY_PREFIX = "credential-retry:"  # support issuing a FAILED credential again

SA_ORGANIZATION = SearchAttributeKey.for_keyword("MandatumOrganization")
SA_STATUS = SearchAttributeKey.for_keyword("MandatumStatus")
SA_SECURITY_LEVEL = SearchAttributeKey.for_keyword("MandatumSecurityLevel")
SA_INTERNAL_ID = SearchAttributeKey.for_keyword("MandatumInternalId")
# a closed request's business outcome (core.kinds.RequestOutcome): approved, rejected, partly
# approved, identity failed, canceled, expired; unset while the request is pending
SA_OUTCOME = SearchAttributeKey.for_keyword("MandatumOutcome")
# a webhook delivery's request and event type (with MandatumOrganization)
SA_REQUEST = SearchAttributeKey.for_keyword("MandatumRequest")
SA_EVENT_TYPE = SearchAttributeKey.for_keyword("MandatumEventType")

# name -> type, as `temporal server start-dev --search-attribute NAME=TYPE` wants it
SEARCH_ATTRIBUTES = {
    SA_ORGANIZATION.name: "Keyword",
    SA_STATUS.name: "Keyword",
    SA_SECURITY_LEVEL.name: "Keyword",
    SA_INTERNAL_ID.name: "Keyword",
    SA_OUTCOME.name: "Keyword",
    SA_REQUEST.name: "Keyword",
    SA_EVENT_TYPE.name: "Keyword",
}
SEARCH_ATTRIBUTE_KEYS = [
    SA_ORGANIZATION,
    SA_STATUS,
    SA_SECURITY_LEVEL,
    SA_INTERNAL_ID,
    SA_OUTCOME,
    SA_REQUEST,
    SA_EVENT_TYPE,
]


def webhook_search_attributes(
    organization_id: str, request_id: str | None, event_type: str
) -> TypedSearchAttributes:
    """A webhook delivery workflow's search attributes: its organization, request (none for a
    ``test`` event) and event type, so operators filter deliveries as they filter requests."""
    pairs = [
        SearchAttributePair(SA_ORGANIZATION, organization_id),
        SearchAttributePair(SA_EVENT_TYPE, event_type),
    ]
    if request_id:
        pairs.append(SearchAttributePair(SA_REQUEST, request_id))
    return TypedSearchAttributes(pairs)


def request_workflow_id(request_id: str) -> str:
    return REQUEST_WORKFLOW_PREFIX + request_id


def request_id_from_workflow_id(workflow_id: str) -> str:
    if not workflow_id.startswith(REQUEST_WORKFLOW_PREFIX):
        raise ValueError(f"not a credential-request workflow id: {workflow_id}")
    return workflow_id[len(REQUEST_WORKFLOW_PREFIX) :]


def webhook_workflow_id(event_id: str) -> str:
    return WEBHOOK_WORKFLOW_PREFIX + event_id


def credential_retry_workflow_id(credential_id: str) -> str:
    return CREDENTIAL_RETRY_PREFIX + credential_id


def event_id_from_webhook_workflow_id(workflow_id: str) -> str:
    if not workflow_id.startswith(WEBHOOK_WORKFLOW_PREFIX):
        raise ValueError(f"not a webhook workflow id: {workflow_id}")
    return workflow_id[len(WEBHOOK_WORKFLOW_PREFIX) :]


class ActivityNames:
    RECORD_CANCELLATION = "record_request_cancellation"
    RECORD_EXPIRY = "record_request_expiry"
    RECORD_DECISION = "record_subject_decision"
    ISSUE_CREDENTIAL = "issue_credential"
    # revision 3: the record, the issuance and the event of a decision in one (ADR 27)
    WRITE_DECISION = "write_subject_decision"
    CREATE_CREDENTIAL_EVENT = "create_credential_event"
    DELIVER_WEBHOOK = "deliver_webhook"
    RECORD_WEBHOOK_FAILURE = "record_webhook_failure"
    SEND_OTP = "send_otp"
    SEND_LINK = "send_link"  # the link alone, when the code goes to a secondary contact (issue 36)
    CHECK_OTP = "check_otp"
    CHECK_TRUSTED_SESSION = "check_trusted_session"
    CREATE_OTP_FAILED_EVENT = "create_otp_failed_event"
    RECORD_IDENTITY = "record_identity"
    CREATE_IDENTITY_EVENT = "create_identity_event"
    WEBHOOK_EVENT_STATE = "webhook_event_state"
    REOPEN_CREDENTIAL = "reopen_failed_credential"  # support's retry of a FAILED issuance (issue 32)
    RESTART_IDENTITY = "restart_identity_check"  # support's restart of an errored check (issue 32)
