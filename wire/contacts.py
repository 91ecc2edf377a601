"""Contacts are e-mail addresses or E.164 phone numbers (CONTRACT section 4).

Parsing is left to the libraries that know the rules: email-validator and phonenumbers.
"""

from __future__ import annotations

import phonenumbers
from email_validator import EmailNotValidError, validate_email

from core.text import QUOTE_LIMIT, one_line, quote_input


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
