"""The changes between API versions (CONTRACT 10), each small, named and tested: one module per
version, holding the changes that version introduced (``v2026_11_01``, ``v2026_09_01``), and what
the older versions share (``legacy``). Importing this package registers them all in
``wire.versioning.CHANGES``, newest version first, each version's in the order of its module.

``2026-05-20`` and ``2026-09-01`` are the shapes the public SDK's releases 1.0.5 and 1.2.0 read
and send; ``2026-11-01`` follows SPEC.md. A change is registered on the version that introduced
it and undoes itself towards the version before (``wire.versioning``): answers are walked back
newest change first, requests forward oldest change first. Resources are route names
(``api.versions``), ``webhook:<eventType>`` for event payloads, or ``ERROR_BODY`` for every
error answer (``api.errors``).

What the older versions could not be given exactly is said where it is approximated:
``executionsRemaining`` is -1 for a mandate without a use limit (this service has none; the
releases document null for it but their model refuses null), a credential without a signed
document carries ``w3cCredential: {}`` (the releases' model requires an object), decisions are
grouped per grantor as lists (the releases' model types them as lists of lists), and
``isFraud`` is always false (this service has no fraud signal).
"""

from __future__ import annotations

from wire.version_changes import (
    users,
    v2026_09_01,
    v2026_11_01,
    v2026_11_01_approvals,
    v2026_11_01_inline,
    v2026_11_01_resend,
)
from wire.version_changes.legacy import (
    INACTIVE_STATUSES,
    SECURITY_LEVEL_NAMES,
    SECURITY_LEVELS_OF,
    UNLIMITED_EXECUTIONS,
    legacy_credential,
    legacy_identity_status,
    legacy_security_level,
    legacy_status,
    legacy_subject,
)
from wire.version_changes.v2026_09_01 import ACTIVITY_TYPE_NAMES, ACTIVITY_TYPES_OF, V2026_09_01
from wire.version_changes.v2026_11_01 import (
    AUDIT_EVENT_NAMES,
    CONTENT_BOUND,
    CONTENT_FIELDS,
    V2026_11_01,
)
from wire.versioning import CHANGES

__all__ = [
    "ACTIVITY_TYPES_OF",
    "ACTIVITY_TYPE_NAMES",
    "AUDIT_EVENT_NAMES",
    "CHANGES",
    "CONTENT_BOUND",
    "CONTENT_FIELDS",
    "INACTIVE_STATUSES",
    "SECURITY_LEVELS_OF",
    "SECURITY_LEVEL_NAMES",
    "UNLIMITED_EXECUTIONS",
    "V2026_09_01",
    "V2026_11_01",
    "legacy_credential",
    "legacy_identity_status",
    "legacy_security_level",
    "legacy_status",
    "legacy_subject",
]

CHANGES.extend(v2026_11_01.VERSION_CHANGES)
CHANGES.extend(v2026_11_01_approvals.VERSION_CHANGES)
CHANGES.extend(v2026_11_01_inline.VERSION_CHANGES)
CHANGES.extend(v2026_11_01_resend.VERSION_CHANGES)
CHANGES.extend(v2026_09_01.VERSION_CHANGES)
CHANGES.extend(users.VERSION_CHANGES)  # sorted by version where they apply
