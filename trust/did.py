"""DID documents in the Multikey form, and resolving verification methods to public keys.

did:key resolves offline from the identifier itself. did:web documents of our own are produced by
the service; a ``Resolver`` combines both behind one call: verification method id -> public key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

from trust.multikey import MultibaseError, decode_public_key

DID_CONTEXT = "https://www.w3.org/ns/did/v1"
MULTIKEY_CONTEXT = "https://w3id.org/security/multikey/v1"


class UnknownVerificationMethod(LookupError):
    """The verification method cannot be resolved to a key (unknown DID, key or fragment)."""


@dataclass(frozen=True)
class VerificationMethod:
    id: str
    controller: str
    public_key_multibase: str

    def as_json(self) -> dict[str, str]:
        return {
            "id": self.id,
            "type": "Multikey",
            "controller": self.controller,
            "publicKeyMultibase": self.public_key_multibase,
        }


def web_service_did(public_url: str) -> str:
    """did:web of the service answering at ``public_url``; a port is percent-encoded as did:web requires."""
    return "did:web:" + quote(urlsplit(public_url).netloc, safe="")


def web_organization_did(public_url: str, org_id: str) -> str:
    return f"{web_service_did(public_url)}:orgs:{org_id}"


def web_subject_did(public_url: str, subject_uuid: str) -> str:
    return f"{web_service_did(public_url)}:subjects:{subject_uuid}"


def key_id(did: str, public_key_multibase: str) -> str:
    """Our verification method ids: the DID and the key's own multibase as the fragment."""
    return f"{did}#{public_key_multibase}"


def did_document(did: str, public_keys_multibase: Iterable[str]) -> dict[str, Any]:
    """A DID document listing every key (current and retired) for assertion and authentication."""
    methods = [VerificationMethod(key_id(did, mk), did, mk) for mk in public_keys_multibase]
    ids = [m.id for m in methods]
    return {
        "@context": [DID_CONTEXT, MULTIKEY_CONTEXT],
        "id": did,
        "verificationMethod": [m.as_json() for m in methods],
        "assertionMethod": ids,
        "authentication": ids,
    }


def did_key_document(did: str) -> dict[str, Any]:
    """The DID document of a did:key (Ed25519 Multikey form), derived from the DID alone."""
    if not did.startswith("did:key:z6Mk"):
        raise UnknownVerificationMethod(f"not an Ed25519 did:key: {did}")
    multikey = did[len("did:key:") :]
    try:
        decode_public_key(multikey)
    except MultibaseError as exc:
        raise UnknownVerificationMethod(f"malformed did:key {did}: {exc}") from exc
    return did_document(did, [multikey])


def _absolute(did: str, ref: str) -> str:
    return did + ref if ref.startswith("#") else ref


def find_method(document: Mapping[str, Any], method_id: str, relationship: str) -> bytes:
    """The public key of ``method_id`` if the document lists it under ``relationship``."""
    did = str(document.get("id", ""))
    methods = {
        _absolute(did, m.get("id", "")): m
        for m in document.get("verificationMethod", [])
        if isinstance(m, dict)
    }
    allowed: set[str] = set()
    for ref in document.get(relationship, []):
        if isinstance(ref, dict):  # an embedded verification method
            methods.setdefault(_absolute(did, ref.get("id", "")), ref)
            allowed.add(_absolute(did, ref.get("id", "")))
        elif isinstance(ref, str):
            allowed.add(_absolute(did, ref))
    method = methods.get(method_id)
    if method is None:
        raise UnknownVerificationMethod(f"{method_id} is not in the DID document of {did}")
    if method_id not in allowed:
        raise UnknownVerificationMethod(f"{method_id} is not authorized for {relationship}")
    try:
        return decode_public_key(method.get("publicKeyMultibase", ""))
    except MultibaseError as exc:
        raise UnknownVerificationMethod(f"{method_id}: {exc}") from exc


DocumentFetcher = Callable[[str], Mapping[str, Any] | None]


class Resolver:
    """Verification method id -> Ed25519 public key, for one proof purpose.

    ``fetch_did_document`` returns the document of a DID this service knows (its own did:web
    DIDs) or None; did:key is always resolved offline. When the fetcher may serve from a cache,
    ``fetch_fresh`` bypasses it: a method missing from the first document is looked up once more
    in a fresh one (a key rotated a moment ago elsewhere).
    """

    def __init__(
        self, fetch_did_document: DocumentFetcher | None = None, fetch_fresh: DocumentFetcher | None = None
    ) -> None:
        self._fetch = fetch_did_document
        self._fetch_fresh = fetch_fresh

    def document(self, did: str, fresh: bool = False) -> Mapping[str, Any]:
        if did.startswith("did:key:"):
            return did_key_document(did)
        fetch = self._fetch_fresh if fresh and self._fetch_fresh else self._fetch
        found = fetch(did) if fetch else None
        if found is None:
            raise UnknownVerificationMethod(f"cannot resolve {did}")
        return found

    def public_key(self, method_id: str, relationship: str) -> bytes:
        did = method_id.split("#", 1)[0]
        try:
            return find_method(self.document(did), method_id, relationship)
        except UnknownVerificationMethod:
            if self._fetch_fresh is None or did.startswith("did:key:"):
                raise
            return find_method(self.document(did, fresh=True), method_id, relationship)
