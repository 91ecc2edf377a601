"""The users' routes (``POST /user``, ``GET /user``; issue 36) in the older versions: 2026-11-01
shows a user's identity as the other records do and names the user by its DID; 2026-09-01 numbered
an import's item results as 1.2.0 documents them, 2026-05-20 as 1.0.5 did."""

from __future__ import annotations

from typing import Any

from wire.version_changes.legacy import legacy_identity_status, without
from wire.version_changes.v2026_09_01 import V2026_09_01
from wire.version_changes.v2026_11_01 import V2026_11_01
from wire.versioning import Body, VersionChange

CREATED_OR_UPDATED = ("Subject created", "Subject updated")
# 1.0.5's item statuses: 200 done, 201 nothing to update, 402 a country that is not one, 407 the
# contact twice in the call, 409 a duplicate identity (here: an internalId of another user)
STATUSES_105 = {409: 407, 410: 409}


def _user_was_the_issuer_entity(body: Body) -> Body:
    """2026-09-01's identityStatus: NONE, KYC (an identity the organization holds: imported, or its
    own check) or HUMANOS (the platform's check); no id, kyc or hasIdentity."""
    status = legacy_identity_status(body)
    if status == "NONE" and body.get("hasIdentity"):
        status = "KYC"
    return {**without(body, "id", "kyc", "hasIdentity"), "identityStatus": status}


def _item_statuses_were_105s(body: Any) -> Any:
    """The answer is a list of item results (``Body`` is typed as an object)."""

    def item(result: Body) -> Body:
        status, message = result.get("status"), str(result.get("message", ""))
        if status == 201:
            status = 200 if message in CREATED_OR_UPDATED else 201
        elif status == 400 and message.startswith("identity.countryAlpha3"):
            status = 402
        else:
            status = STATUSES_105.get(int(status or 0), status)
        return {**result, "status": status}

    return [item(r) for r in body] if isinstance(body, list) else body


VERSION_CHANGES: list[VersionChange] = [
    VersionChange(
        V2026_11_01,
        "GET /user answers the user's DID, identityStatus and kyc as requests do (was NONE, KYC, HUMANOS)",
        "get_user",
        to_previous=_user_was_the_issuer_entity,
    ),
    VersionChange(
        V2026_09_01,
        "POST /user's item statuses 201, 400, 409, 410 (were 200, 201, 400, 402, 407, 409)",
        "create_users",
        to_previous=_item_statuses_were_105s,
    ),
]
