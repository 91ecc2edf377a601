"""What each path parameter takes, as the OpenAPI document declares it: regular expressions that
read the same in ECMA-262 (JSON Schema's dialect) and in Python.

Each is exactly what the code accepts, no more and no less: a value that matches gets past the
parameter's check (to a 404 when nothing has that id), one that does not is a 400 naming it
(``tests/api/test_openapi.py`` tries examples of both against the service). A URN's colons may
come encoded once more (``%3A``), as a client that percent-encodes a path twice sends them
(``core.ids.colons_decoded``).
"""

from __future__ import annotations

from core.ids import UUID_PATTERN
from wire.models import DID_RE

UUID_ANY_CASE = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
COLON = "(?::|%3[Aa])"
MAX_DID_LENGTH = 500


def _urn(kind: str, uuid: str = UUID_PATTERN) -> str:
    return f"urn{COLON}via{COLON}{kind}{COLON}{uuid}"


# requests, credential entities, organizations: 24 lower-case hex characters (CONTRACT 3)
OBJECT_ID = "^[0-9a-f]{24}$"
# a mandate, to present: its URN as issued (lower case)
MANDATE_URN = f"^{_urn('credential')}$"
# a credential to read or revoke: its entity id, or its mandate URN (the UUID in either case)
CREDENTIAL_REFERENCE = f"^(?:[0-9a-f]{{24}}|{_urn('credential', UUID_ANY_CASE)})$"
# an evidence item of a mandate: the decision it records
DECISION_URN = f"^{_urn('decision')}$"
# a published action (its colons never decoded twice: store.actions.is_action_urn)
ACTION_URN = f"^urn:via:action:{UUID_PATTERN}$"
# status lists and subjects: a UUID as str(uuid.UUID) writes it
CANONICAL_UUID = f"^{UUID_PATTERN}$"
DID = DID_RE.pattern
