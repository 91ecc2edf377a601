"""Approvals for the tests: a spec of each type and a small PDF."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from fpdf import FPDF

from core.actors import Actor
from services import approvals
from services.context import Context
from wire.approvals import ApprovalSpec

ALICE = Actor.shell_operator("alice")
FORM: dict[str, Any] = {
    "name": "Onboarding form",
    "type": "FORM",
    "description": "Tell us about you",
    "internalId": "form-1",
    "fields": [
        {"name": "fullName", "label": "Full name", "type": "text", "required": True, "maxLength": 80},
        {"name": "age", "label": "Age", "type": "number", "min": 18, "max": 120},
        {"name": "start", "label": "Start date", "type": "date"},
        {"name": "newsletter", "label": "Newsletter", "type": "boolean"},
        {"name": "plan", "label": "Plan", "type": "choice", "options": ["basic", "pro"], "required": True},
    ],
}
JSON: dict[str, Any] = {"name": "Terms", "type": "JSON", "json": {"terms": "v3", "limits": {"daily": 500}}}
DOCUMENT: dict[str, Any] = {
    "name": "Lease contract",
    "type": "DOCUMENT",
    "internalId": "lease-1",
    "placements": [{"type": "SIGNATURE", "pageIndex": 0, "x": 10, "y": 80, "width": 40, "height": 8}],
}


def policy(action_id: str) -> dict[str, Any]:
    return {
        "name": "Rent payments",
        "type": "POLICY",
        "action": {"id": action_id, "userParams": {"maxAmount": 900}},
    }


def pdf(pages: int = 1, text: str = "Lease") -> bytes:
    doc = FPDF()
    doc.set_creation_date(datetime(2026, 1, 1, tzinfo=UTC))  # the same bytes every time
    doc.set_font("helvetica", size=12)
    for i in range(pages):
        doc.add_page()
        doc.cell(text=f"{text} page {i + 1}")
    return bytes(doc.output())


def approval_spec(raw: dict[str, Any], **changes: Any) -> ApprovalSpec:
    return ApprovalSpec.model_validate({**raw, **changes})


def make(ctx: Context, org_id: str, raw: dict[str, Any], document: bytes | None = None) -> str:
    """A new approval of ``raw`` (a DOCUMENT with ``document`` or a one-page PDF): its id."""
    if raw["type"] == "DOCUMENT" and document is None:
        document = pdf()
    return approvals.create(ctx, ALICE, org_id, approval_spec(raw), document).approval.id
