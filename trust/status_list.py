"""W3C Bitstring Status List v1.0: the list credential we publish, and what a verifier does with it.

Pure: the caller passes the set indices, times, the key and URLs; nothing here reads a clock or a
database.

- The bitstring is ``length`` bits (at least ``MIN_LENGTH`` = 131,072, 16 KiB, the specification's
  minimum for herd privacy). Index 0 is the left-most bit: the most significant bit of the first
  byte; index ``length - 1`` is the least significant bit of the last byte. One bit per entry
  (``statusSize`` 1), purpose ``revocation``: 1 = revoked.
- ``encodedList`` is the multibase form (prefix ``u``) of the base64url encoding, without padding,
  of the GZIP-compressed bitstring (RFC 1952). Compression uses ``mtime=0``, so the same bits give
  the same string in every process.
- The list credential: ``{@context: [credentials v2, ours], id: <list URL>, type:
  [VerifiableCredential, BitstringStatusListCredential], issuer: <service DID>, validFrom,
  credentialSubject: {id: <list URL>#list, type: BitstringStatusList, statusPurpose, encodedList,
  ttl}}`` with an eddsa-jcs-2022 ``proof`` (purpose ``assertionMethod``) by the issuer's key.
  ``ttl`` (milliseconds) says how long a verifier may cache it.

The checks of ``credential_status`` follow the specification's validation algorithm; each failure
raises a ``StatusError`` whose ``code`` is the specification's error name.
"""

from __future__ import annotations

import base64
import gzip
import zlib
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from trust.context import contexts
from trust.credentials import validity_error, verify_credential
from trust.did import Resolver
from trust.eddsa_jcs import ASSERTION_METHOD, ProofError, format_datetime, sign_document
from trust.keys import Ed25519KeyPair

MIN_LENGTH = 131_072  # bits: 16 KiB
MAX_DECODED_BYTES = 16 * 1024 * 1024  # refuse lists (or GZIP bombs) that inflate beyond this
LIST_CREDENTIAL_TYPE = "BitstringStatusListCredential"
LIST_TYPE = "BitstringStatusList"
ENTRY_TYPE = "BitstringStatusListEntry"
REVOCATION = "revocation"


class StatusError(Exception):
    """A status that cannot be determined; ``code`` is the specification's error name."""

    code = "STATUS_VERIFICATION_ERROR"


class MalformedValue(StatusError):
    code = "MALFORMED_VALUE_ERROR"


class ListTooShort(StatusError):
    code = "STATUS_LIST_LENGTH_ERROR"


class OutOfRange(StatusError):
    code = "RANGE_ERROR"


class ListNotVerified(StatusError):
    """The list credential's proof, issuer, purpose or validity window is not acceptable."""

    code = "STATUS_VERIFICATION_ERROR"


# --- the bitstring ------------------------------------------------------------------------------


def bitstring(set_indices: Iterable[int], length: int = MIN_LENGTH) -> bytes:
    """``length`` bits (a multiple of 8) with the given indices set, index 0 the left-most bit."""
    if length < MIN_LENGTH or length % 8:
        raise ValueError(f"a status list has at least {MIN_LENGTH} bits, a multiple of 8")
    bits = bytearray(length // 8)
    for index in set_indices:
        if not 0 <= index < length:
            raise OutOfRange(f"index {index} is outside a list of {length} entries")
        bits[index >> 3] |= 0x80 >> (index & 7)
    return bytes(bits)


def encode_list(bits: bytes) -> str:
    """``encodedList``: ``u`` + base64url (no padding) of the GZIP-compressed bitstring."""
    compressed = gzip.compress(bits, compresslevel=9, mtime=0)
    return "u" + base64.urlsafe_b64encode(compressed).decode("ascii").rstrip("=")


def decode_list(encoded: Any) -> bytes:
    """The bitstring of an ``encodedList``; MalformedValue when it is not one."""
    if not isinstance(encoded, str) or not encoded.startswith("u"):
        raise MalformedValue("encodedList is not a multibase base64url string (prefix u)")
    body = encoded[1:]
    if "=" in body or "+" in body or "/" in body:
        raise MalformedValue("encodedList is not base64url without padding")
    try:
        compressed = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)  # GZIP framing only
        bits = inflater.decompress(compressed, MAX_DECODED_BYTES)
    except (ValueError, zlib.error) as exc:
        raise MalformedValue(f"encodedList does not decode: {exc}") from exc
    if inflater.unconsumed_tail:
        raise MalformedValue(f"encodedList inflates beyond {MAX_DECODED_BYTES} bytes")
    if not inflater.eof or inflater.unused_data:
        raise MalformedValue("encodedList is not exactly one complete GZIP member")
    return bits


def bit_at(bits: bytes, index: int) -> bool:
    """Whether entry ``index`` is set (OutOfRange past the end)."""
    if not 0 <= index < len(bits) * 8:
        raise OutOfRange(f"index {index} is outside a list of {len(bits) * 8} entries")
    return bool(bits[index >> 3] & (0x80 >> (index & 7)))


# --- the list credential ------------------------------------------------------------------------


def list_credential(
    *,
    list_url: str,
    issuer_key: Ed25519KeyPair,
    context_url: str,
    encoded_list: str,
    valid_from: datetime,
    created: datetime,
    ttl_ms: int | None = None,
    purpose: str = REVOCATION,
) -> dict[str, Any]:
    """The signed BitstringStatusListCredential served at ``list_url``."""
    subject: dict[str, Any] = {
        "id": f"{list_url}#list",
        "type": LIST_TYPE,
        "statusPurpose": purpose,
        "encodedList": encoded_list,
    }
    if ttl_ms is not None:
        subject["ttl"] = ttl_ms
    credential = {
        "@context": contexts(context_url),
        "id": list_url,
        "type": ["VerifiableCredential", LIST_CREDENTIAL_TYPE],
        "issuer": issuer_key.verification_method.split("#", 1)[0],
        "validFrom": format_datetime(valid_from),
        "credentialSubject": subject,
    }
    return sign_document(credential, issuer_key, proof_purpose=ASSERTION_METHOD, created=created)


def verify_list_credential(
    listed: Mapping[str, Any], resolver: Resolver, *, now: datetime | None = None
) -> bytes:
    """Check a list credential as a verifier does (types, proof by its issuer, validity window at
    ``now``, by default the current time, length) and return its bitstring; a StatusError
    otherwise."""
    if LIST_CREDENTIAL_TYPE not in (listed.get("type") or []):
        raise MalformedValue(f"not a {LIST_CREDENTIAL_TYPE}")
    subject = listed.get("credentialSubject")
    if not isinstance(subject, Mapping) or subject.get("type") != LIST_TYPE:
        raise MalformedValue(f"the credential subject is not a {LIST_TYPE}")
    try:
        verify_credential(listed, resolver, now=now)
        problem = validity_error(listed, now or datetime.now(UTC))
    except ProofError as exc:
        raise ListNotVerified(f"the status list credential does not verify: {exc} ({exc.code})") from exc
    if problem is not None:
        raise ListNotVerified(f"the status list credential is {problem.replace('_', ' ')}")
    bits = decode_list(subject.get("encodedList"))
    if len(bits) * 8 < MIN_LENGTH:
        raise ListTooShort(f"the list has {len(bits) * 8} entries, fewer than {MIN_LENGTH}")
    return bits


def credential_status(
    credential: Mapping[str, Any],
    listed: Mapping[str, Any],
    resolver: Resolver,
    *,
    purpose: str = REVOCATION,
    now: datetime | None = None,
) -> bool:
    """Whether ``credential``'s ``purpose`` bit is set in ``listed`` (the list credential fetched
    from its entry's ``statusListCredential``): True = revoked for purpose ``revocation``."""
    entries = credential.get("credentialStatus")
    items = entries if isinstance(entries, list) else [entries]
    matching = [
        e
        for e in items
        if isinstance(e, Mapping) and e.get("type") == ENTRY_TYPE and e.get("statusPurpose") == purpose
    ]
    if len(matching) != 1:
        raise MalformedValue(f"the credential has no single {ENTRY_TYPE} for {purpose}")
    entry = matching[0]
    if listed.get("id") != entry.get("statusListCredential"):
        raise ListNotVerified("the list credential is not the one the entry names")
    if listed.get("issuer") != credential.get("issuer"):
        raise ListNotVerified("the list is not issued by the credential's issuer")
    subject = listed.get("credentialSubject")
    listed_purposes = subject.get("statusPurpose") if isinstance(subject, Mapping) else None
    if purpose not in (listed_purposes if isinstance(listed_purposes, list) else [listed_purposes]):
        raise ListNotVerified(f"the list's statusPurpose is not {purpose}")
    bits = verify_list_credential(listed, resolver, now=now)
    raw_index = entry.get("statusListIndex")
    if not isinstance(raw_index, str) or not raw_index.isdigit():
        raise MalformedValue("statusListIndex is not a non-negative integer string")
    return bit_at(bits, int(raw_index))
