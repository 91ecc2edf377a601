"""A readable PDF of a credential: what the subject approved, who accepted it and when, and the
credential's identifiers, issuer, dates and status (``GET /credential/{id}?includePdf=true``).

The PDF is a rendering for people; what verifies is the signed W3C credential beside it.

Text: with a Unicode TrueType font (DejaVu Sans, from the system's fonts, e.g. Debian's
``fonts-dejavu-core``) every script DejaVu covers is rendered and embedded (as a subset). Without
one, the PDF core font Helvetica is used in the Windows-1252 encoding, which holds every letter of
Portuguese, Spanish and French (ã, ç, ñ, é, œ, «», €...); a character outside it is shown as ``?``.
Hidden data items are masked with a fixed-length mask (their length is not revealed). A control,
line separator or bidi control in any text (``core.text``: one stored before entry refused them) is
shown as a visible ``\\uXXXX`` marker; only a description and a document's values keep their line
breaks.

Rendering is CPU work (about 13 microseconds per character of text), so it is bounded three ways:
a document's text is capped at creation (``wire/models.py``), each rendering is kept
(``Renderer``: in memory and in the database, ``store.pdfs``, under a digest of everything the PDF
shows, so a status change or a revocation makes a new digest and an old PDF is never served for
it), and renderings run on their own small
thread pool, never the default executor the database calls share: at most ``RENDER_WORKERS`` at
once and ``RENDER_WAITING`` more queued; a caller beyond that gets ``Busy`` (503 with
``Retry-After``). Concurrent calls for the same key share one rendering.

Placements (``wire.placements``): after the sheet's text, each placement of a DOCUMENT is drawn on
its page (counted from 0) in its rectangle, given in percent of the page's width and height from
the page's top-left corner (the y axis points down, as in the hosted SDK's editor; in PDF user
space, whose origin is the bottom-left corner, a box's top edge is at ``height * (1 - y/100)``).
For a signer who accepted it holds their mark (``Mark``); for one who has not, an empty box with
its label. Its text is fitted to the box (the largest size that fits, down to ``MIN_MARK_SIZE``)
and clipped to it, so nothing is ever drawn outside it. A page a placement names that the sheet's
text does not reach (the text can only grow after creation, when the page count was checked, so
this is a safeguard) is added blank.

A credential made of a DOCUMENT approval (``document_sri``, the digest of the approval's PDF, is
part of what the sheet's digest covers): its PDF is the approval's own PDF with the marks stamped
on its pages (``api.pdf_marks.stamp``: the same drawing, on an overlay page as large as each
page), followed by the sheet's pages, which then carry no marks. It is rendered on the same pool,
kept under the same digest; the approval's PDF is read (and its digest checked) only to render.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from fpdf import FPDF
from fpdf.enums import MethodReturnValue, XPos, YPos
from fpdf.errors import FPDFException

from api.pdf_marks import Mark as Mark
from api.pdf_marks import mark_text, sri_sha256, stamp, when
from core.kinds import CredentialStatus
from core.text import escaped

# (regular, bold) pairs, first found wins: Debian/Ubuntu, Fedora, Alpine/Arch
UNICODE_FONT_CANDIDATES: tuple[tuple[Path, Path], ...] = tuple(
    (Path(d) / "DejaVuSans.ttf", Path(d) / "DejaVuSans-Bold.ttf")
    for d in (
        "/usr/share/fonts/truetype/dejavu",
        "/usr/share/fonts/dejavu-sans-fonts",
        "/usr/share/fonts/dejavu",
        "/usr/share/fonts/TTF",
    )
)
CORE_ENCODING = "windows-1252"
MASK = "\u2022" * 8 + " (hidden)"
STATUS_WORDS: dict[str, str] = {  # every CredentialStatus (a test checks)
    CredentialStatus.DRAFT: "created, not sent to the subjects yet",
    CredentialStatus.PENDING: "awaiting the subjects' decision",
    CredentialStatus.ACTIVE: "accepted and issued",
    CredentialStatus.REJECTED: "rejected; nothing was issued",
    CredentialStatus.CANCELED: "the request was canceled before a decision",
    CredentialStatus.EXPIRED: "no decision before the request expired",
    CredentialStatus.REVOKED: "revoked by the organization",
    CredentialStatus.FAILED: "accepted, but it could not be issued; nothing was issued",
}
GREY, BLACK = (90, 90, 90), (0, 0, 0)
OTHER = (1, 2, 3)  # a colour set only to be replaced (_place)
log = logging.getLogger("mandatum.api.pdf")
RENDER_WORKERS = 1  # fpdf2 is pure Python: under the GIL a second thread adds no speed, only contention
RENDER_WAITING = 8
RETRY_AFTER_SECONDS = 5
CACHE_BYTES = 64 * 1024 * 1024
# part of every PDF's digest: a change to how a sheet is drawn renders the kept PDFs anew
# (2: unsafe characters shown as \uXXXX; 3: placements; 4: a DOCUMENT approval's PDF stamped)
RENDERING = 4
MIN_MARK_SIZE, MAX_MARK_SIZE = 3.0, 12.0  # points, the text in a placement's box
PT_MM = 25.4 / 72


@dataclass(frozen=True)
class Acceptance:
    contact: str
    accepted: bool
    decided_at: datetime
    signer_quality: str | None = None  # in which capacity they signed, as the credential signs it


@dataclass(frozen=True)
class CredentialSheet:
    """Everything the PDF shows, already chosen by the caller."""

    organization_name: str
    name: str
    description: str | None
    resource_type: str
    status: str
    items: Sequence[dict[str, Any]]
    decisions: Sequence[Acceptance]
    credential_id: str
    mandate_id: str | None
    issuer: str
    subject: str
    issued_at: datetime | None
    valid_from: datetime | None
    valid_until: datetime | None
    revoked_at: datetime | None
    revocation_reason: str | None
    verify_hint: str
    marks: Sequence[Mark] = ()
    # a credential made of a DOCUMENT approval: its PDF's digest (``digestSRI``). The PDF is then
    # that PDF with the marks stamped on its pages, followed by the sheet (``pdf_marks.stamp``)
    document_sri: str | None = None


def unicode_font() -> tuple[Path, Path] | None:
    """The first installed (regular, bold) DejaVu Sans pair, if any."""
    for regular, bold in UNICODE_FONT_CANDIDATES:
        if regular.is_file() and bold.is_file():
            return regular, bold
    return None


class _Writer:
    def __init__(self, font: tuple[Path, Path] | None, first_page: bool = True) -> None:
        self.pdf = FPDF(format="A4")
        self.pdf.set_auto_page_break(True, margin=18)
        self.pdf.set_margins(18, 18, 18)
        if font is None:
            self.pdf.core_fonts_encoding = CORE_ENCODING
            self.family, self.unicode = "helvetica", False
        else:
            self.pdf.add_font("dejavu", "", str(font[0]))
            self.pdf.add_font("dejavu", "B", str(font[1]))
            self.family, self.unicode = "dejavu", True
        if first_page:
            self.pdf.add_page()

    def text(self, value: str, multiline: bool = False) -> str:
        """``value`` as drawn: unsafe characters escaped (``multiline`` keeps line feeds), and in the
        core font's encoding without a Unicode font."""
        value = escaped(value, keep_lines=multiline).replace("\r\n", "\n")
        return value if self.unicode else value.encode(CORE_ENCODING, "replace").decode(CORE_ENCODING)

    def line(
        self,
        value: str,
        size: float = 10,
        bold: bool = False,
        color: tuple[int, int, int] = BLACK,
        gap: float = 1.5,
        multiline: bool = False,
    ) -> None:
        self.pdf.set_font(self.family, "B" if bold else "", size)
        self.pdf.set_text_color(*color)
        shown = self.text(value, multiline)
        self.pdf.multi_cell(0, size * 0.5, shown, align="L", new_x=XPos.LMARGIN, new_y=YPos.NEXT)
        self.pdf.ln(gap)

    def heading(self, value: str) -> None:
        self.pdf.ln(3)
        self.line(value, size=12, bold=True)
        y = self.pdf.get_y()
        self.pdf.set_draw_color(*GREY)
        self.pdf.line(self.pdf.l_margin, y, self.pdf.w - self.pdf.r_margin, y)
        self.pdf.ln(2)

    def field(self, label: str, value: str, multiline: bool = False) -> None:
        self.line(label, size=8, bold=True, color=GREY, gap=0.3)
        self.line(value, size=10, gap=2, multiline=multiline)


def render(
    sheet: CredentialSheet,
    font: tuple[Path, Path] | Literal["auto"] | None = "auto",
    document: bytes | None = None,
) -> bytes:
    """The PDF bytes. ``font``: "auto" uses DejaVu Sans when installed, else the core font; a
    (regular, bold) pair of TrueType files; None forces the core font. With ``document`` (the PDF
    of the DOCUMENT approval the credential was made from, whose digest is ``sheet.document_sri``)
    the marks are stamped on its pages and the sheet follows them (``api.pdf_marks.stamp``)."""
    if document is not None:
        if sheet.document_sri is None or sri_sha256(document) != sheet.document_sri:
            raise ValueError("the approval's PDF is not the one the credential names")
        chosen = unicode_font() if font == "auto" else font
        by_page: dict[int, list[Mark]] = {}
        for mark in sheet.marks:
            by_page.setdefault(mark.page_index, []).append(mark)

        def overlay(sizes: list[tuple[float, float]]) -> bytes:
            out = _Writer(chosen, first_page=False)
            out.pdf.set_auto_page_break(False)
            for index, (width, height) in zip(sorted(by_page), sizes, strict=True):
                out.pdf.add_page(format=(width * PT_MM, height * PT_MM))
                for mark in by_page[index]:
                    _draw(out, mark)
            return bytes(out.pdf.output())

        return stamp(document, sorted(by_page), overlay, bytes(_sheet(sheet, chosen).pdf.output()))
    out = _sheet(sheet, font)
    _place(out, sheet.marks)
    return bytes(out.pdf.output())


def page_count(sheet: CredentialSheet, font: tuple[Path, Path] | Literal["auto"] | None = "auto") -> int:
    """How many pages the sheet's text fills (its placements add none): laid out, not serialized."""
    return _sheet(sheet, font).pdf.pages_count


def _sheet(sheet: CredentialSheet, font: tuple[Path, Path] | Literal["auto"] | None) -> _Writer:
    out = _Writer(unicode_font() if font == "auto" else font)
    out.pdf.set_title(out.text(sheet.name))
    out.pdf.set_author(out.text(sheet.organization_name))
    out.pdf.set_creator("Mandatum")
    kind = "Document credential" if sheet.resource_type == "DOCUMENT" else "Mandate"
    out.line(sheet.name, size=18, bold=True, gap=2)
    out.line(f"{kind} requested by {sheet.organization_name}", size=11, color=GREY, gap=3)
    if sheet.description:
        out.line(sheet.description, gap=3, multiline=True)
    status = f"Status: {sheet.status} ({STATUS_WORDS.get(sheet.status, sheet.status.lower())})"
    out.line(status, size=11, bold=True, gap=1)
    if sheet.revoked_at is not None:
        reason = f", reason: {sheet.revocation_reason}" if sheet.revocation_reason else ""
        out.line(f"Revoked on {when(sheet.revoked_at)}{reason}")

    out.heading("What was approved" if sheet.issued_at else "What the subjects are asked to approve")
    for item in sheet.items:
        value = MASK if item.get("hidden") else str(item.get("value", ""))
        out.field(str(item.get("label", "")), value, multiline=True)
    if not sheet.items:
        out.line("(no items)", color=GREY)

    out.heading("Decisions")
    for decision in sheet.decisions:
        verb = "accepted" if decision.accepted else "rejected"
        quality = f" (as {decision.signer_quality})" if decision.signer_quality else ""
        out.line(f"{decision.contact}{quality}: {verb} on {when(decision.decided_at)}")
    if not sheet.decisions:
        out.line("No decision yet.", color=GREY)

    out.heading("Credential")
    out.field("Credential id", sheet.credential_id)
    out.field("Mandate id", sheet.mandate_id or "- (assigned at issuance)")
    out.field("Issuer", sheet.issuer)
    out.field("Issued to (credential subject)", sheet.subject)
    out.field("Issuance date", when(sheet.issued_at, "- (not issued)"))
    validity = f"from {when(sheet.valid_from, 'issuance')} until {when(sheet.valid_until, 'no end date')}"
    out.field("Validity", validity)
    out.field("Status", sheet.status)
    out.pdf.ln(4)
    out.line(sheet.verify_hint, size=8, color=GREY)
    return out


def _place(out: _Writer, marks: Sequence[Mark]) -> None:
    """Each mark on its page, fitted and clipped to its box (see the module doc)."""
    if not marks:
        return
    pdf = out.pdf
    pdf.set_auto_page_break(False)
    while pdf.pages_count <= max(m.page_index for m in marks):
        pdf.page = pdf.pages_count
        pdf.add_page()
    for mark in marks:
        pdf.page = mark.page_index + 1
        _draw(out, mark)
    pdf.page = pdf.pages_count


def _draw(out: _Writer, mark: Mark) -> None:
    """One mark on the current page (every page of the writer as large as this one), fitted and
    clipped to its box."""
    pdf = out.pdf
    x, w = pdf.w * mark.x / 100, pdf.w * mark.width / 100
    y, h = pdf.h * mark.y / 100, pdf.h * mark.height / 100
    lines, accepted = mark_text(mark)
    # fpdf2 writes a colour, width or font only when it differs from the last one set, which
    # may have been set on another page: each is set twice here, so it is written on this one
    pdf.set_draw_color(*OTHER)
    pdf.set_draw_color(*(BLACK if accepted else GREY))
    pdf.set_line_width(0.3)
    pdf.set_line_width(0.2)
    pdf.rect(x, y, w, h)
    # the clip's q/Q also restore the font, which fpdf2 does not track: the local context keeps
    # its idea of the font in step
    with pdf.local_context(), pdf.rect_clip(x, y, w, h):
        _fitted(out, [out.text(line) for line in lines if line], x, y, w, h, accepted)


def _fitted(out: _Writer, lines: list[str], x: float, y: float, w: float, h: float, accepted: bool) -> None:
    """``lines`` in the box at the largest size (MAX_MARK_SIZE down to MIN_MARK_SIZE) whose wrapped
    lines fit it, centred vertically; at the smallest size, what overflows is clipped by the caller."""
    pdf = out.pdf
    pad = min(1.0, w * 0.05, h * 0.05)
    inner_w, inner_h = w - 2 * pad, h - 2 * pad
    pdf.set_text_color(*OTHER)
    pdf.set_text_color(*(BLACK if accepted else GREY))
    size = MAX_MARK_SIZE
    while True:
        pdf.font_family = ""  # as the colours in _place: set_font then always writes the font
        pdf.set_font(out.family, "B" if accepted else "", size)
        line_h = size * PT_MM * 1.15
        count = 0  # lines once wrapped (a word wider than the box is broken)
        for line in lines:
            try:
                wrapped = pdf.multi_cell(inner_w, line_h, line, dry_run=True, output=MethodReturnValue.LINES)
            except FPDFException:  # narrower than one character: the box stays empty
                return
            count += len(wrapped) if isinstance(wrapped, list) else 1
        if count * line_h <= inner_h or size <= MIN_MARK_SIZE:
            break
        size = max(MIN_MARK_SIZE, size - 0.5)
    pdf.set_xy(x + pad, y + pad + max(0.0, (inner_h - count * line_h) / 2))
    for line in lines:
        pdf.multi_cell(inner_w, line_h, line, align="C", new_x=XPos.LEFT, new_y=YPos.NEXT)


Load = Callable[[str, str], "bytes | None"]  # (credential id, content digest) -> a kept PDF
Save = Callable[[str, str, bytes], None]  # (credential id, content digest, PDF)
Document = Callable[[], bytes]  # the approval's PDF a sheet is stamped on (read on the renderer's pool)


def sheet_digest(sheet: CredentialSheet) -> str:
    """A digest of everything the PDF shows: equal digests, equal PDFs."""
    shown = json.dumps(
        {**asdict(sheet), "rendering": RENDERING}, sort_keys=True, default=str, ensure_ascii=False
    )
    return hashlib.sha256(shown.encode()).hexdigest()


class Busy(Exception):
    """Every rendering slot and waiting place is taken; retry after ``retry_after`` seconds."""

    def __init__(self, retry_after: int) -> None:
        super().__init__("PDF rendering is busy")
        self.retry_after = retry_after


class Renderer:
    """Renders each sheet once, on a bounded pool of its own (see the module doc). ``load`` and
    ``save`` reach the PDFs kept in the database, shared by every process (``store.pdfs``)."""

    def __init__(
        self, workers: int = RENDER_WORKERS, waiting: int = RENDER_WAITING, cache_bytes: int = CACHE_BYTES
    ) -> None:
        self._workers, self._admitted_max, self._cache_bytes = workers, workers + waiting, cache_bytes
        self._executor: ThreadPoolExecutor | None = None
        self._cache: OrderedDict[str, bytes] = OrderedDict()
        self._cached_bytes = 0
        self._inflight: dict[str, asyncio.Future[bytes]] = {}
        self._counting = 0  # page counts laid out or waiting (``page_count``)
        self.renders = 0  # renderings started, for tests and operators

    async def pdf(
        self,
        sheet: CredentialSheet,
        load: Load | None = None,
        save: Save | None = None,
        document: Document | None = None,
    ) -> bytes:
        """The sheet's PDF: kept, or rendered once. ``document`` reads the approval's PDF a sheet
        with a ``document_sri`` is stamped on (only when it is rendered)."""
        digest = sheet_digest(sheet)
        key = f"{sheet.credential_id}:{digest}"
        kept = self._cache.get(key)
        if kept is not None:
            self._cache.move_to_end(key)
            return kept
        if key not in self._inflight and load is not None:
            stored = await asyncio.to_thread(load, sheet.credential_id, digest)
            if stored is not None:
                self._keep(key, stored)
                return stored
        running = self._inflight.get(key)
        if running is None:
            if len(self._inflight) + self._counting >= self._admitted_max:
                raise Busy(RETRY_AFTER_SECONDS)
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="mandatum-pdf")
            # not tied to this caller: one who leaves neither cancels it nor frees its slot early
            running = asyncio.get_running_loop().run_in_executor(
                self._executor, _render_and_save, sheet, digest, save, document
            )
            self._inflight[key] = running
            self.renders += 1
            running.add_done_callback(lambda done: self._settle(key, done))
        return await asyncio.shield(running)

    async def page_count(self, sheet: CredentialSheet) -> int:
        """The sheet's page count (``page_count``), laid out on the same bounded pool (``Busy``)."""
        if len(self._inflight) + self._counting >= self._admitted_max:
            raise Busy(RETRY_AFTER_SECONDS)
        if self._executor is None:
            self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="mandatum-pdf")
        self._counting += 1
        # like a rendering, not tied to its caller: one who leaves does not free the slot early
        counting = asyncio.get_running_loop().run_in_executor(self._executor, page_count, sheet)
        counting.add_done_callback(self._counted)
        return await asyncio.shield(counting)

    def _counted(self, _: asyncio.Future[int]) -> None:
        self._counting -= 1

    def _settle(self, key: str, done: asyncio.Future[bytes]) -> None:
        self._inflight.pop(key, None)
        if not done.cancelled() and done.exception() is None:
            self._keep(key, done.result())

    def _keep(self, key: str, rendered: bytes) -> None:
        if len(rendered) > self._cache_bytes:
            return
        if key in self._cache:
            return
        self._cache[key] = rendered
        self._cached_bytes += len(rendered)
        while self._cached_bytes > self._cache_bytes:
            _, dropped = self._cache.popitem(last=False)
            self._cached_bytes -= len(dropped)


def _render_and_save(
    sheet: CredentialSheet, digest: str, save: Save | None, document: Document | None = None
) -> bytes:
    base = None
    if sheet.document_sri is not None:
        if document is None:
            raise ValueError("a sheet stamped on an approval's PDF needs that PDF")
        base = document()
    # looked up at call time, so tests can stand in for it
    rendered = render(sheet, document=base) if base is not None else render(sheet)
    if save is not None:
        try:
            save(sheet.credential_id, digest, rendered)
        except Exception:  # the PDF is still good: the next process renders it again
            log.exception("could not keep the PDF of credential %s", sheet.credential_id)
    return rendered


RENDERER = Renderer()
