"""CSV exports of the dashboard's lists (requests, activity): what the page's filters select, at
most ``MAX_ROWS`` rows, written on a thread. A cell that a spreadsheet would read as a formula
(it starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return) is prefixed with ``'``, so
opening the file never runs what a subject, a member or an integrator typed (OWASP's CSV
injection advice)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

from fastapi.responses import Response

MAX_ROWS = 10_000
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def safe_cell(value: Any) -> str:
    text = "" if value is None else str(value)
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def csv_text(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\r\n")
    writer.writerow(header)
    for row in rows:
        writer.writerow([safe_cell(cell) for cell in row])
    return out.getvalue()


def csv_response(filename: str, text: str) -> Response:
    return Response(
        text.encode("utf-8-sig"),  # the BOM: spreadsheets read the UTF-8 as such
        media_type="text/csv; charset=utf-8",
        headers={
            "Content-Disposition": f'attachment; filename="{filename}"',
            "Cache-Control": "no-store",
            "Referrer-Policy": "same-origin",
        },
    )
