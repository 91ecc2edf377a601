"""The dashboard (issue 14): the pages members of an organization use, server-rendered, one module
per section, each on the service layer with the member as actor.

- ``common``: the session cookie, the member of a request, the origin and CSRF checks of forms.
- ``auth``: log in and out, set a password from a one-time link, the overview.
- ``keys``, ``webhooks``: API keys and the webhook (owners and developers).
- ``settings``: frame origins, the VP lifetime, the API version pin (owners and developers).
- ``requests``: credential requests, their subjects' progress and the support actions.
- ``mandates``: issued credentials, their verifications, revocation with a reason.
- ``activity``: the audit trail with its filters and a check of the chain.
- ``actions``: actions and their versions, the rule editor, publishing (owners and developers).
- ``members``: the organization's members (owners) and each member's account (second factor,
  sessions).
- ``operators``: platform staff's area across organizations (search, a request's timeline, the
  support actions with a reason).
"""

from fastapi import APIRouter

from api.routes.dashboard import (
    actions,
    activity,
    auth,
    keys,
    mandates,
    members,
    operators,
    requests,
    settings,
    webhooks,
)

router = APIRouter(include_in_schema=False)
for section in (auth, keys, webhooks, settings, requests, mandates, actions, activity, members, operators):
    router.include_router(section.router)
