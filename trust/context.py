"""Our JSON-LD context: the terms our credentials, presentations and receipts use beyond the W3C
credentials v2 context.

- The service serves it at the stable path ``CONTEXT_PATH`` (``/ns/v1``); ``context_url(base)``
  is the URL every document lists right after ``https://www.w3.org/ns/credentials/v2``.
- The *vocabulary* IRIs are not derived from the deployment host: every term expands under
  ``VOCAB`` = ``https://w3id.org/mandatum#``, so the meaning of a signed document does not change
  when the service moves or runs under another host name.
- The context is ``@protected`` and redefines none of the v2 context's terms (top level or
  type-scoped), which JSON-LD would refuse; it only adds ours.
- Free-form values are JSON literals (``@json``): the approved ``userParams``, a document's
  ``data`` items (``label``, ``type``, ``value``, ``hidden``, ``fields``) and its ``placements``.
  A data item's own ``type`` ("text", ...) must not be read as a JSON-LD ``@type``, and the
  literal keeps the items exactly as signed. The item terms are still defined, for use outside ``data``.
- Receipts have ``type`` values ``PRESENTATION_ISSUED`` and the like (CONTRACT section 5). Those
  types carry a type-scoped context that defines ``proof`` as v2 does inside a credential, since
  a receipt is not a credential and v2 defines ``proof`` only within its own types.
"""

from __future__ import annotations

import copy
from typing import Any

CONTEXT_PATH = "/ns/v1"
CREDENTIALS_V2 = "https://www.w3.org/ns/credentials/v2"
VOCAB = "https://w3id.org/mandatum#"

XSD_DATETIME = "http://www.w3.org/2001/XMLSchema#dateTime"
SRI_STRING = "https://www.w3.org/2018/credentials#sriString"
RECEIPT_TYPES = ("PRESENTATION_ISSUED", "VERIFICATION_APPROVED", "VERIFICATION_DENIED", "MANDATE_REVOKED")

_PROOF = {"@id": "https://w3id.org/security#proof", "@type": "@id", "@container": "@graph"}


def context_url(base_url: str) -> str:
    """Where the service at ``base_url`` serves this context (``https://host/ns/v1``)."""
    return base_url.rstrip("/") + CONTEXT_PATH


def _iri(name: str) -> str:
    return VOCAB + name


def _ref(name: str) -> dict[str, str]:
    """A term whose values are IRIs (DIDs, URNs, URLs)."""
    return {"@id": _iri(name), "@type": "@id"}


def _date(name: str) -> dict[str, str]:
    return {"@id": _iri(name), "@type": XSD_DATETIME}


def _json(name: str) -> dict[str, str]:
    return {"@id": _iri(name), "@type": "@json"}


_TERMS: dict[str, Any] = {
    # types
    "VIAMandate": _iri("VIAMandate"),
    "VIADocument": _iri("VIADocument"),
    **{
        name: {"@id": _iri(name), "@context": {"@protected": True, "proof": _PROOF}} for name in RECEIPT_TYPES
    },
    # mandate form
    "mandate": _iri("mandate"),
    "grantor": _ref("grantor"),
    "scope": _iri("scope"),
    "context": _iri("context"),
    "authorizedDIDs": _ref("authorizedDIDs"),
    "action": _ref("action"),
    "version": _ref("version"),
    "userParams": _json("userParams"),
    "maxExecutions": {"@id": _iri("maxExecutions"), "@type": "http://www.w3.org/2001/XMLSchema#integer"},
    "limits": _json("limits"),
    "evidences": _ref("evidences"),
    # in which capacity each signer signed (issue 36): [{id: <subject DID>, signerQuality}]
    "signerQualities": _json("signerQualities"),
    "location": _ref("location"),
    "proofs": _PROOF | {"@id": _iri("proofs")},
    # document form
    "issuanceDate": {"@id": "https://www.w3.org/2018/credentials#issuanceDate", "@type": XSD_DATETIME},
    "data": _json("data"),
    "label": _iri("label"),
    "value": _iri("value"),
    "hidden": _iri("hidden"),
    "fields": _json("fields"),
    "placements": _json("placements"),
    "actionType": _iri("actionType"),
    "actionProof": {"@id": _iri("actionProof"), "@type": SRI_STRING},
    "createdAt": _date("createdAt"),
    # receipts
    "credentialId": _ref("credentialId"),
    "requestId": _iri("requestId"),
    "presentationId": _ref("presentationId"),
    "decision": _iri("decision"),
    "reason": _iri("reason"),
    "verifier": _ref("verifier"),
    "evaluationsDigest": {"@id": _iri("evaluationsDigest"), "@type": SRI_STRING},
    "timestamp": _date("timestamp"),
}


def context_document() -> dict[str, Any]:
    """The JSON-LD context document served at ``CONTEXT_PATH`` (a fresh copy)."""
    return {"@context": {"@protected": True, **copy.deepcopy(_TERMS)}}


def contexts(base_url_or_context_url: str) -> list[str]:
    """The ``@context`` of our documents: W3C credentials v2, then ours."""
    ours = base_url_or_context_url
    if not ours.endswith(CONTEXT_PATH):
        ours = context_url(ours)
    return [CREDENTIALS_V2, ours]
