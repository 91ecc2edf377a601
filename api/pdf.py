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
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from fpdf import FPDF
from fpdf.enums import XPos, YPos

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
log = logging.getLogger("mandatum.api.pdf")
RENDER_WORKERS = 1  # fpdf2 is pure Python: under the GIL a second thread adds no speed, only contention
RENDER_WAITING = 8
RETRY_AFTER_SECONDS = 5
CACHE_BYTES = 64 * 1024 * 1024
# part of every PDF's digest: a change to how a sheet is drawn renders the kept PDFs anew
# (2: unsafe characters shown as \uXXXX)
RENDERING = 2


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


def unicode_font() -> tuple[Path, Path] | None:
    """The first installed (regular, bold) DejaVu Sans pair, if any."""
    for regular, bold in UNICODE_FONT_CANDIDATES:
        if regular.is_file() and bold.is_file():
            return regular, bold
    return None


def _when(moment: datetime | None, empty: str = "-") -> str:
    if moment is None:
        return empty
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return aware.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


class _Writer:
    def __init__(self, font: tuple[Path, Path] | None) -> None:
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


def render(sheet: CredentialSheet, font: tuple[Path, Path] | Literal["auto"] | None = "auto") -> bytes:
    """The PDF bytes. ``font``: "auto" uses DejaVu Sans when installed, else the core font; a
    (regular, bold) pair of TrueType files; None forces the core font."""
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
        out.line(f"Revoked on {_when(sheet.revoked_at)}{reason}")

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
        out.line(f"{decision.contact}{quality}: {verb} on {_when(decision.decided_at)}")
    if not sheet.decisions:
        out.line("No decision yet.", color=GREY)

    out.heading("Credential")
    out.field("Credential id", sheet.credential_id)
    out.field("Mandate id", sheet.mandate_id or "- (assigned at issuance)")
    out.field("Issuer", sheet.issuer)
    out.field("Issued to (credential subject)", sheet.subject)
    out.field("Issuance date", _when(sheet.issued_at, "- (not issued)"))
    validity = f"from {_when(sheet.valid_from, 'issuance')} until {_when(sheet.valid_until, 'no end date')}"
    out.field("Validity", validity)
    out.field("Status", sheet.status)
    out.pdf.ln(4)
    out.line(sheet.verify_hint, size=8, color=GREY)
    return bytes(out.pdf.output())


Load = Callable[[str, str], "bytes | None"]  # (credential id, content digest) -> a kept PDF
Save = Callable[[str, str, bytes], None]  # (credential id, content digest, PDF)


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
        self.renders = 0  # renderings started, for tests and operators

    async def pdf(self, sheet: CredentialSheet, load: Load | None = None, save: Save | None = None) -> bytes:
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
            if len(self._inflight) >= self._admitted_max:
                raise Busy(RETRY_AFTER_SECONDS)
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self._workers, thread_name_prefix="mandatum-pdf")
            # not tied to this caller: one who leaves neither cancels it nor frees its slot early
            running = asyncio.get_running_loop().run_in_executor(
                self._executor, _render_and_save, sheet, digest, save
            )
            self._inflight[key] = running
            self.renders += 1
            running.add_done_callback(lambda done: self._settle(key, done))
        return await asyncio.shield(running)

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


def _render_and_save(sheet: CredentialSheet, digest: str, save: Save | None) -> bytes:
    rendered = render(sheet)  # looked up at call time, so tests can stand in for it
    if save is not None:
        try:
            save(sheet.credential_id, digest, rendered)
        except Exception:  # the PDF is still good: the next process renders it again
            log.exception("could not keep the PDF of credential %s", sheet.credential_id)
    return rendered


RENDERER = Renderer()
