"""A document credential (the lease) and reading the text of its PDF."""

from __future__ import annotations

import base64
import io
from typing import Any

from pypdf import PdfReader

SECRET = "PT50 0002 0123 1234 5678 9015 4"


LEASE: dict[str, Any] = {
    "type": "DOCUMENT",
    "name": "Contrato de arrendamento",
    "description": "Ação de despejo: cœur, año",
    "internalId": "lease-7",
    "data": [
        {"label": "Morada", "type": "text", "value": "Rua da Conceição 1, Lisboa", "hidden": False},
        {"label": "Renda mensal", "type": "text", "value": "1 250 €", "hidden": False},
        {"label": "IBAN", "type": "text", "value": SECRET, "hidden": True},
    ],
}


def pdf_text(encoded: str) -> str:
    raw = base64.b64decode(encoded, validate=True)
    assert raw.startswith(b"%PDF-")
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(raw)).pages)
