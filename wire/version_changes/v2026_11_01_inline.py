"""2026-11-01's inline documents and JSON credentials (``wire.inline_credentials``), from 2026-09-01:
SDK 1.2.0's ``CredentialDto.data`` (``CredentialDtoData``, 1.0.5's too) is one string, "a
base64-encoded PDF document string" for a DOCUMENT and, for the type JSON the release recommends
"for general use", the object as JSON text.

A DOCUMENT whose ``data`` is a string gives it as ``pdf`` (its items, a list, stay ``data``: the
newest shape, which a client may hand the release's model as they are); a JSON credential's
``data`` becomes ``json``, parsed when it is text. What is not an object is refused here, named
(a 400); everything else is checked by the newest model as sent (base64, size, the PDF itself).
"""

from __future__ import annotations

import json
from typing import Any

from wire.inline_credentials import MAX_JSON_LEVELS
from wire.json_depth import json_depth_exceeds
from wire.version_changes.legacy import without
from wire.versioning import BadBody, Body, VersionChange

V2026_11_01 = "2026-11-01"
JSON_KINDS = {list: "an array", str: "a string", int: "a number", float: "a number", bool: "a boolean"}


def _json_of(value: Any, where: str) -> Any:
    """A JSON credential's ``data``: an object, or its JSON text (parsed); BadBody otherwise."""
    if isinstance(value, str):
        if json_depth_exceeds(value.encode(), MAX_JSON_LEVELS):
            raise BadBody(f"{where}: the JSON is nested more than {MAX_JSON_LEVELS} levels deep")
        try:
            value = json.loads(value)
        except ValueError as exc:
            raise BadBody(f"{where}: a JSON credential's data is an object as JSON text; {exc}") from None
    if not isinstance(value, dict):
        kind = JSON_KINDS.get(type(value), "null")
        raise BadBody(f"{where}: a JSON credential's data is a JSON object (or its text), not {kind}")
    return value


def _credential(credential: Any, where: str) -> Any:
    if not isinstance(credential, dict) or "data" not in credential:
        return credential
    kind, data = credential.get("type"), credential["data"]
    if kind == "DOCUMENT" and isinstance(data, str):
        return {**without(credential, "data"), "pdf": data}
    if kind == "JSON" and data is not None:
        return {**without(credential, "data"), "json": _json_of(data, f"{where}.data")}
    return credential


def _data_was_a_pdf_or_json_text(body: Body) -> Body:
    credentials = body.get("credentials")
    if not isinstance(credentials, list):  # refused by the newest version's checks, as sent
        return body
    return {**body, "credentials": [_credential(c, f"credentials.{i}") for i, c in enumerate(credentials)]}


VERSION_CHANGES: list[VersionChange] = [
    VersionChange(
        V2026_11_01,
        "a DOCUMENT's own PDF is pdf and a JSON credential's object json (both were data: base64, text)",
        "create_request",
        request_from_previous=_data_was_a_pdf_or_json_text,
    ),
]
