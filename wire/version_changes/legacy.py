"""What the versions before 2026-11-01 share: their names for the security levels, and a request's
subjects and credentials as the public SDK's releases (1.0.5 and 1.2.0) show them.

What the older versions could not be given exactly is approximated here: ``executionsRemaining``
is -1 for a mandate without a use limit (this service has none; the releases document null for it
but their model refuses null), a credential without a signed document carries ``w3cCredential:
{}`` (the releases' model requires an object), and decisions are grouped per grantor as lists
(the releases' model types them as lists of lists).
"""

from __future__ import annotations

from typing import Any

from wire.versioning import Body

UNLIMITED_EXECUTIONS = -1
SECURITY_LEVEL_NAMES = {"PLATFORM_KYC": "HUMANOS_KYC", "PLATFORM_REVALIDATION": "HUMANOS_REVALIDATION"}
SECURITY_LEVELS_OF = {old: new for new, old in SECURITY_LEVEL_NAMES.items()}
INACTIVE_STATUSES = ("REJECTED", "CANCELED", "EXPIRED", "REVOKED", "FAILED")


def legacy_security_level(level: Any) -> Any:
    return SECURITY_LEVEL_NAMES.get(level, level) if isinstance(level, str) else level


def legacy_identity_status(subject: Body) -> str:
    """The releases' NONE, KYC or HUMANOS: whether, and by whom, the subject's identity was
    verified (the platform's check shows in ``kyc``)."""
    if subject.get("identityStatus") != "VERIFIED":
        return "NONE"
    return "HUMANOS" if subject.get("kyc") == "VERIFIED" else "KYC"


def legacy_status(credential: Body) -> Body:
    """2026-09-01's DRAFT, ACTIVE or INACTIVE; an inactive credential says why in ``inactiveAt``
    (``{"reason": <the status>}``), which 2026-05-20 shows as the status itself."""
    status = credential.get("status")
    if status in INACTIVE_STATUSES:
        return {**credential, "status": "INACTIVE", "inactiveAt": {"reason": status}}
    return {**credential, "status": "ACTIVE" if status == "ACTIVE" else "DRAFT", "inactiveAt": None}


def legacy_credential(credential: Body) -> Body:
    """A credential of a request (or of an event) in the releases' CredentialEntity shape."""
    out = legacy_status(credential)
    out["w3cCredential"] = credential.get("w3cCredential") or {}
    out["decisions"] = [[decision] for decision in credential.get("decisions") or []]
    # the releases' model refuses null: -1 is their "no use limit" (issue 31: the room left otherwise)
    remaining = credential.get("executionsRemaining")
    out["executionsRemaining"] = UNLIMITED_EXECUTIONS if remaining is None else remaining
    return without(out, "limits", "maxExecutions", "placements")  # 1.2.0's entity has no placements


def legacy_subject(subject: Body) -> Body:
    # 2026-09-01's subject entities have no signerQuality (issue 36: the newest shape's alone)
    return {**without(subject, "signerQuality"), "identityStatus": legacy_identity_status(subject)}


def without(body: Body, *names: str) -> Body:
    return {k: v for k, v in body.items() if k not in names}
