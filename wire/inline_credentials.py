"""What a request's credential may carry inline beside SPEC.md's data items (issue 36): a DOCUMENT's
own PDF (``pdf``, base64) and a JSON credential's object (``json``), both bounded where they enter.

``pdf`` is the standard base64 alphabet (RFC 4648 section 4, padded, no line breaks) of a PDF of at
most ``MAX_INLINE_PDF_BYTES``: the whole body is at most 1 MiB (``api.auth``), so every inline PDF of
one request together stays below about 760 KiB. The model checks the base64 and the size; what the
bytes are (a PDF pypdf reads, unencrypted, 1 to 200 pages) is checked by
``services.request_validation`` with the approvals' check (``services.approvals.pdf_facts``).

``json`` is an object of at most ``MAX_JSON_TEXT`` characters in compact form, nested at most
``MAX_JSON_LEVELS`` levels, its numbers JSON-canonicalizable (``wire.numbers``): the bounds of a
JSON approval's object (``wire.approvals``), as the credential holds it the same way (one data item).
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, WithJsonSchema

from wire.json_depth import json_depth_exceeds
from wire.numbers import reject_non_jcs
from wire.texts import multiline_strings

MAX_INLINE_PDF_BYTES = 700 * 1024  # 716 800 bytes; the body limit (1 MiB) holds its base64 and more
MAX_INLINE_PDF_BASE64 = 4 * math.ceil(MAX_INLINE_PDF_BYTES / 3)  # 955 736 characters
MAX_JSON_TEXT = 4_000  # a JSON object in compact form (a credential data item holds it)
MAX_JSON_LEVELS = 10

PDF_DOC = (
    "DOCUMENT: the document's own PDF, base64 (standard alphabet, padded), at most "
    f"{MAX_INLINE_PDF_BYTES} bytes ({MAX_INLINE_PDF_BASE64} characters); unencrypted, 1 to 200 pages. "
    "It is stored with the request, its SHA-256 (digestSRI) signed in the credential's first data "
    "item `{type: PDF}`, and shown to the subjects; placements' pageIndex counts its pages."
)
JSON_DOC = (
    f"JSON: an object (at most {MAX_JSON_TEXT} characters as compact JSON, {MAX_JSON_LEVELS} levels), "
    "signed as the credential's one data item `{type: JSON}` holding its canonical compact text."
)


def pdf_bytes(value: str) -> bytes:
    """The bytes of a checked ``pdf`` value (``_base64_pdf`` let it in)."""
    return base64.b64decode(value, validate=True)


def _base64_pdf(value: Any) -> Any:
    if not isinstance(value, str):
        raise ValueError("must be a string: the PDF in base64")
    if len(value) > MAX_INLINE_PDF_BASE64:
        raise ValueError(
            f"is {len(value)} characters of base64; a PDF of at most {MAX_INLINE_PDF_BYTES} bytes "
            f"({MAX_INLINE_PDF_BASE64} characters) is taken inline"
        )
    if not value:
        raise ValueError("is empty: give the PDF in base64")
    try:
        decoded = pdf_bytes(value)
    except (binascii.Error, ValueError):
        raise ValueError(
            "is not base64 (the standard alphabet A-Z a-z 0-9 + /, padded with =, no line breaks)"
        ) from None
    if len(decoded) > MAX_INLINE_PDF_BYTES:
        raise ValueError(f"is a PDF of {len(decoded)} bytes; at most {MAX_INLINE_PDF_BYTES}")
    return value


def json_object(value: dict[str, Any]) -> dict[str, Any]:
    """A JSON object within the bounds a credential's data item holds (``MAX_JSON_TEXT``, levels)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if len(text) > MAX_JSON_TEXT:
        raise ValueError(f"is {len(text)} characters as compact JSON; at most {MAX_JSON_TEXT}")
    if json_depth_exceeds(text.encode(), MAX_JSON_LEVELS):
        raise ValueError(f"is nested more than {MAX_JSON_LEVELS} levels deep")
    return value


def compact_json(value: dict[str, Any]) -> str:
    """The text a JSON credential's data item holds: compact, keys sorted (as JSON approvals')."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)


InlinePdf = Annotated[
    str,
    BeforeValidator(_base64_pdf),
    WithJsonSchema(
        {
            "type": "string",
            "contentEncoding": "base64",
            "contentMediaType": "application/pdf",
            "maxLength": MAX_INLINE_PDF_BASE64,
        }
    ),
]
InlineJson = Annotated[
    dict[str, Any],
    AfterValidator(reject_non_jcs),
    AfterValidator(multiline_strings),
    AfterValidator(json_object),
]


def type_problem(credential: Any) -> str | None:
    """What a credential's type does not take or lacks (``CredentialIn``), else None."""
    kind = credential.type
    has = {
        "action": credential.action is not None,
        "data": credential.data is not None,
        "pdf": credential.pdf is not None,
        "json": credential.json_ is not None,
        "placements": bool(credential.placements),
        "maxExecutions": credential.maxExecutions is not None,
    }
    takes = {
        "POLICY": {"action", "maxExecutions"},
        "DOCUMENT": {"data", "pdf", "placements"},
        "JSON": {"json"},
    }[kind]
    extra = [name for name, given in has.items() if given and name not in takes]
    if kind == "POLICY" and not has["action"]:
        return "a POLICY credential needs action {id, userParams}"
    if kind == "DOCUMENT" and not (has["data"] or has["pdf"]):
        return "a DOCUMENT credential needs data [{label, type, value, hidden}] or its pdf (base64)"
    if kind == "JSON" and not has["json"]:
        return "a JSON credential needs json (an object)"
    if has["maxExecutions"] and kind != "POLICY":
        return f"maxExecutions bounds a mandate's uses: a {kind} credential has none"
    if extra:
        return f"a {kind} credential takes {' and '.join(sorted(takes))}, not {', '.join(extra)}"
    return None
