"""The dashboard (issue 14): the pages members of an organization use, server-rendered, one module
per section, each on the service layer with the member as actor.

- ``common``: the session cookie, the member of a request, the origin and CSRF checks of forms.
- ``auth``: log in and out, set a password from a one-time link, the overview.
- ``keys``: API keys (owners and developers).
- ``webhooks``, ``webhook_endpoints``: the webhook endpoints, each one's page (owners and
  developers).
- ``webhook_events``, ``event_replay``: the webhook events, each one's page, retries, resends and
  the replay of failed ones (every member).
- ``settings``: frame origins, the VP lifetime, the API version pin (owners and developers).
- ``requests``: credential requests, their subjects' progress and the support actions.
- ``request_retries``: support's retries on a request's page (owners and support; issue 32).
- ``mandates``: issued credentials, their verifications, revocation with a reason.
- ``activity``: the audit trail with its filters and a check of the chain.
- ``actions``: actions and their versions, the rule editor, publishing (owners and developers).
- ``members``: the organization's members (owners) and each member's account (sessions).
- ``second_factor``: each member's second factor (set up, replaced, recovery codes, turned off,
  each with the password and the factor) and an owner turning off another member's.
- ``operators``: operators's area across organizations (search, a request's timeline, the
  support actions with a reason).
"""

from fastapi import APIRouter

from api.routes.dashboard import (
    actions,
    activity,
    approvals,
    auth,
    event_replay,
    keys,
    mandates,
    members,
    operators,
    request_resend,
    request_retries,
    requests,
    second_factor,
    settings,
    webhook_endpoints,
    webhook_events,
    webhooks,
)

router = APIRouter(include_in_schema=False)
# second_factor before members: /dashboard/members/{id}/second-factor is its own, not a change of
# members' /dashboard/members/{id}/{change}
SECTIONS = (
    auth,
    keys,
    event_replay,  # before webhook_events: /dashboard/events/replay is not an event's page
    webhook_events,
    webhooks,  # before webhook_endpoints: /dashboard/webhooks/add is not an endpoint's page
    webhook_endpoints,
    settings,
    requests,
    request_retries,
    mandates,
    actions,
    approvals,
    activity,
    second_factor,
    members,
    request_resend,  # before operators: its /dashboard/operators/requests/{id}/send-again
    operators,
)
for section in SECTIONS:
    router.include_router(section.router)
