"""Matching an identity check's document with what the organization expects (issue 36): a request's
``docId`` for the subject, and the identity it imported (``POST /user``).

Values are compared as people write them differently: a document number in upper case without
spaces, dashes, dots or slashes (``normalize_document_id``); a name case folded, without accents,
its spaces collapsed (``normalize_name``); a country as its alpha-3 code in upper case; a birth date
as YYYY-MM-DD. A member the provider did not return is not compared. What did not match is named,
never the value expected.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from wire.texts import one_line_text

_DOC_SEPARATORS = re.compile(r"[\s\-./]+")
MISMATCH = "The identity document does not match the one expected for this person"


def normalize_document_id(value: str) -> str:
    """A document number as compared: NFKC, upper case, without spaces, dashes, dots or slashes."""
    return _DOC_SEPARATORS.sub("", unicodedata.normalize("NFKC", value)).upper()


def normalize_name(value: str) -> str:
    """A name as compared: case folded, without accents, runs of spaces as one."""
    decomposed = unicodedata.normalize("NFKD", value.casefold())
    bare = "".join(ch for ch in decomposed if not unicodedata.combining(ch))
    return " ".join(bare.split())


def document_id(value: str) -> str:
    """A validator: a document number holds at least one letter or digit once normalized."""
    if not normalize_document_id(value):
        raise ValueError("must hold at least one letter or digit")
    return value


# a document number as a body gives it (a request's ``docId``, an imported identity's)
DocumentIdText = Annotated[
    str, Field(min_length=1, max_length=64), AfterValidator(one_line_text), AfterValidator(document_id)
]


@dataclass(frozen=True)
class CheckedDocument:
    """What an identity provider read from the person's document (each member when it read it)."""

    document_id: str | None = None
    full_name: str | None = None
    birth: str | None = None  # YYYY-MM-DD
    country_alpha3: str | None = None


def mismatches(
    document: CheckedDocument,
    doc_id_hash: str | None,
    identity: dict[str, Any] | None,
    document_hash: Callable[[str], str],
) -> list[str]:
    """The members of ``document`` that differ from what is expected (empty: it matches). An
    expected document number with no number returned is a mismatch: the check cannot show it."""
    found: list[str] = []
    returned_id = normalize_document_id(document.document_id) if document.document_id else None
    expected_ids = []
    if doc_id_hash is not None:
        expected_ids.append(("docId", lambda r: document_hash(r) == doc_id_hash))
    if identity is not None and identity.get("docId"):
        wanted = normalize_document_id(str(identity["docId"]))
        expected_ids.append(("identity.docId", lambda r: r == wanted))
    for name, same in expected_ids:
        if returned_id is None or not same(returned_id):
            found.append(name)
    if identity is None:
        return found
    if document.full_name and identity.get("fullName"):
        if normalize_name(document.full_name) != normalize_name(str(identity["fullName"])):
            found.append("identity.fullName")
    if document.birth and identity.get("birth") and document.birth.strip() != str(identity["birth"]):
        found.append("identity.birth")
    if document.country_alpha3 and identity.get("countryAlpha3"):
        if "".join(document.country_alpha3.split()).upper() != str(identity["countryAlpha3"]):
            found.append("identity.countryAlpha3")
    return found
