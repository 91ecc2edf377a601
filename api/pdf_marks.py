"""What a placement's box holds (``mark_text``), and a DOCUMENT approval's own PDF with the
signers' marks stamped on its pages (``stamp``): the parts of a credential's PDF (``api.pdf``)
that are about placements (``wire.placements``).

An approval's PDF is stamped page by page: the marks of a page are drawn by ``api.pdf`` (the same
code as on a sheet) on an overlay page of fpdf2 as large as the page's visible area (its crop box,
the media box when it has none, once its ``/Rotate`` is turned into its content, so that the
top-left corner is the one a reader sees) and merged over the page with pypdf
(``merge_translated_page``, at the box's corner). Pages without marks are kept as they are; the
credential's sheet follows the last page.
"""

from __future__ import annotations

import base64
import hashlib
import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

MARK_LABELS = {"SIGNATURE": "Signature", "INITIALS": "Initials", "DATE": "Date"}
IDENTITY_LABELS = {
    "FULL_NAME": "Full name",
    "BIRTH_DATE": "Birth date",
    "DOCUMENT_NUMBER": "Document number",
    "COUNTRY": "Country",
}
NO_VALUE = "\u2014"  # an identity field the identity check did not provide

# (each marked page's visible size in points, in order) -> an overlay PDF of one page per size
Overlay = Callable[[list[tuple[float, float]]], bytes]


@dataclass(frozen=True)
class Mark:
    """One placement as drawn, chosen by the caller: its rectangle (percent of the page, from its
    top-left corner) on page ``page_index`` (from 0), and what goes in it."""

    kind: str  # SIGNATURE | INITIALS | IDENTITY_FIELD | DATE
    page_index: int
    x: float
    y: float
    width: float
    height: float
    contact: str  # the signer's contact as shown (masked)
    name: str | None = None  # the signer's verified name, when their identity check gave one
    identity_type: str | None = None  # IDENTITY_FIELD: FULL_NAME, BIRTH_DATE, ...
    identity_value: str | None = None  # its verified value, when the identity check gave one
    decision_id: str | None = None  # set when the signer accepted
    accepted_at: datetime | None = None


def when(moment: datetime | None, empty: str = "-") -> str:
    if moment is None:
        return empty
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _initials(name: str) -> str:
    return "".join(f"{word[0].upper()}." for word in name.split()[:4] if word)


def mark_text(mark: Mark) -> tuple[list[str], bool]:
    """The lines drawn in a placement's box, and whether the signer accepted (else it is a label)."""
    label = IDENTITY_LABELS.get(mark.identity_type or "FULL_NAME", "Identity")
    if mark.kind != "IDENTITY_FIELD":
        label = MARK_LABELS.get(mark.kind, mark.kind.title())
    who = mark.name or mark.contact
    if mark.accepted_at is None:
        return [f"{label}: {who}"], False
    if mark.kind == "SIGNATURE":
        return [who, f"accepted {when(mark.accepted_at)}", mark.decision_id or ""], True
    if mark.kind == "INITIALS":
        return [_initials(mark.name) if mark.name else who[:1].upper() + "."], True
    if mark.kind == "IDENTITY_FIELD":
        return [mark.identity_value or NO_VALUE], True
    return [when(mark.accepted_at)[:10]], True  # DATE: the decision's UTC date


def sri_sha256(data: bytes) -> str:
    """``sha256-<base64>``, as ``trust.credentials.sri_sha256`` writes a PDF's digest."""
    return "sha256-" + base64.b64encode(hashlib.sha256(data).digest()).decode("ascii")


def stamp(document: bytes, pages: Sequence[int], overlay: Overlay, tail: bytes) -> bytes:
    """``document`` with page ``pages[k]`` (from 0, ascending) covered by page ``k`` of
    ``overlay(sizes)``, then ``tail``'s pages (see the module doc)."""
    from pypdf import PdfReader, PdfWriter  # imported when such a PDF is drawn: it is slow to load

    writer = PdfWriter(clone_from=io.BytesIO(document))
    if pages and max(pages) >= len(writer.pages):  # checked when the approval was made
        raise ValueError("a placement is off the approval's PDF")
    boxes = []
    for index in pages:
        page = writer.pages[index]
        if page.rotation % 360:
            page.transfer_rotation_to_content()
        box = page.cropbox
        boxes.append((float(box.left), float(box.bottom), float(box.width), float(box.height)))
    if pages:
        drawn = PdfReader(io.BytesIO(overlay([(w, h) for _, _, w, h in boxes])))
        for k, (index, (left, bottom, _, _)) in enumerate(zip(pages, boxes, strict=True)):
            writer.pages[index].merge_translated_page(drawn.pages[k], left, bottom)
    writer.append(PdfReader(io.BytesIO(tail)))
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()
