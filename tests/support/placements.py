"""Reading placed marks back out of a credential's PDF: each text run's page and position (pypdf's
text matrix), a placement's rectangle in PDF points, and a page drawn as an image (pypdfium2)."""

from __future__ import annotations

import base64
import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pypdf import PdfReader

from tests.support.api_client import SignedClient


@dataclass(frozen=True)
class Run:
    page: int  # from 0
    text: str
    x: float  # the run's origin in PDF points, from the page's bottom-left corner
    y: float


@dataclass(frozen=True)
class Box:
    left: float
    bottom: float
    right: float
    top: float

    def holds(self, run: Run) -> bool:
        return self.left <= run.x <= self.right and self.bottom <= run.y <= self.top


def runs(pdf: bytes) -> list[Run]:
    """Every text run of the PDF with where it starts (the text matrix times the CTM)."""
    found: list[Run] = []
    for index, page in enumerate(PdfReader(io.BytesIO(pdf)).pages):

        def visit(text: str, cm: list[float], tm: list[float], *_: Any, index: int = index) -> None:
            if text.strip():
                x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
                y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
                found.append(Run(index, text.strip(), x, y))

        page.extract_text(visitor_text=visit)
    return found


def box(pdf: bytes, placement: dict[str, Any]) -> Box:
    """A placement's rectangle in PDF points: its x, y, width and height are percent of the page
    from the page's top-left corner (y down), PDF space goes up from the bottom-left."""
    page = PdfReader(io.BytesIO(pdf)).pages[int(placement["pageIndex"])]
    width, height = float(page.mediabox.width), float(page.mediabox.height)
    left = width * placement["x"] / 100
    top = height * (1 - placement["y"] / 100)
    return Box(left, top - height * placement["height"] / 100, left + width * placement["width"] / 100, top)


def page_count(pdf: bytes) -> int:
    return len(PdfReader(io.BytesIO(pdf)).pages)


def page_image(pdf: bytes, index: int, path: Path, scale: float = 1.5) -> Path:
    """Page ``index`` of the PDF drawn as a PNG at ``path`` (pypdfium2, PDFium's renderer)."""
    import pypdfium2

    document = pypdfium2.PdfDocument(pdf)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        document[index].render(scale=scale).to_pil().save(path)
    finally:
        document.close()
    return path


async def pdf_of(api: SignedClient, ident: str) -> bytes:
    resp = await api.get(f"/credential/{quote(ident, safe='')}", params={"includePdf": "true"})
    assert resp.status_code == 200, resp.text
    return base64.b64decode(resp.json()["pdf"])


def text_in(pdf: bytes, placement: dict[str, Any]) -> str:
    """The text runs whose origin lies in the placement's rectangle on its page, in order."""
    rect = box(pdf, placement)
    return " ".join(r.text for r in runs(pdf) if r.page == placement["pageIndex"] and rect.holds(r))
