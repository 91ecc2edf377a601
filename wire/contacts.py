"""Contacts are e-mail addresses or E.164 phone numbers (CONTRACT section 4).

Parsing is left to the libraries that know the rules: email-validator and phonenumbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import phonenumbers
from email_validator import EmailNotValidError, validate_email

from core.text import QUOTE_LIMIT, one_line, quote_input, shown


def normalize_contact(raw: str) -> tuple[str, str]:
    """(normalized contact, "email" | "phone"); ValueError naming the contact otherwise (quoted, at
    most 100 characters of it)."""
    value = raw.strip() if isinstance(raw, str) else ""
    if not value or len(value) > 320:
        raise ValueError(f"{quote_input(raw)} is not an e-mail address or E.164 phone number")
    if value.startswith("+"):
        try:
            number = phonenumbers.parse(value, None)
        except phonenumbers.NumberParseException as exc:
            raise ValueError(f"{quote_input(raw)} is not a valid E.164 phone number") from exc
        e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
        if e164 != value or not phonenumbers.is_valid_number(number):
            raise ValueError(f"{quote_input(raw)} is not a valid E.164 phone number")
        return e164, "phone"
    if "@" in value:
        try:
            email = validate_email(value, check_deliverability=False)
        except EmailNotValidError as exc:
            raise ValueError(
                f"{quote_input(raw)} is not a valid e-mail address: {one_line(str(exc), QUOTE_LIMIT)}"
            ) from exc
        return email.normalized.lower(), "email"
    raise ValueError(f"{quote_input(raw)} is not an e-mail address or E.164 phone number")


# --- a subject of a new request, with their options (issue 36) ------------------------------------

MAX_SIGNER_QUALITY = 100
SECONDARY_CONTACT_DOC = (
    "An e-mail address or E.164 phone number of the same person. When present, `contact` receives "
    "the link without a code, and the one-time code goes to `secondaryContact` when the link is "
    "first opened (resends too). Not the contact of any subject of the request."
)
SIGNER_QUALITY_DOC = (
    'In which capacity the subject signs ("CEO of Acme", "legal guardian"): one line, at most '
    "100 characters, shown on the approval page and signed into the credential. Omitted: the "
    "quality the subject had in the organization's latest earlier request that gave one, if any."
)


class SubjectEntry(Protocol):
    """A contact as the request gives it (``wire.models.ContactIn``)."""

    @property
    def contact(self) -> str: ...
    @property
    def internalId(self) -> str | None: ...
    @property
    def secondaryContact(self) -> str | None: ...
    @property
    def signerQuality(self) -> str | None: ...


@dataclass(frozen=True)
class NormalContact:
    """A subject of a new request as it is stored: the normalized contact and its kind, the
    integrator's reference, the secondary contact (normalized, with its kind) and the quality."""

    contact: str
    kind: str  # "email" | "phone"
    internal_id: str | None = None
    secondary: tuple[str, str] | None = None  # (normalized contact, "email" | "phone")
    signer_quality: str | None = None


def normalize_subjects(entries: Sequence[SubjectEntry]) -> tuple[list[NormalContact], list[str]]:
    """Each contact normalized, with its options, and a message per contact that is not valid. A
    secondary contact is normalized like a contact and is neither the subject's own contact nor
    the contact (or secondary contact) of another subject of the request."""
    out: list[NormalContact] = []
    problems: list[str] = []
    seen: dict[str, str] = {}  # every contact and secondary contact -> where it was given
    for i, entry in enumerate(entries):
        try:
            contact, kind = normalize_contact(entry.contact)
        except ValueError as exc:
            problems.append(f"contacts.{i}: {exc}")
            continue
        if contact in seen:
            what = "already" if seen[contact].endswith("secondaryContact") else "the same subject as"
            problems.append(f"contacts.{i}: {shown(contact)} is {what} {seen[contact]}")
            continue
        seen[contact] = f"contacts.{i}"
        secondary = None
        if entry.secondaryContact is not None:
            where = f"contacts.{i}.secondaryContact"
            try:
                secondary = normalize_contact(entry.secondaryContact)
            except ValueError as exc:
                problems.append(f"{where}: {exc}")
                continue
            if secondary[0] == contact:
                problems.append(f"{where}: must differ from the subject's contact")
                continue
            if secondary[0] in seen:
                problems.append(f"{where}: {shown(secondary[0])} is already {seen[secondary[0]]}")
                continue
            seen[secondary[0]] = where
        out.append(NormalContact(contact, kind, entry.internalId, secondary, entry.signerQuality))
    return out, problems
