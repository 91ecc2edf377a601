"""Rendered PDFs of credentials, kept in the database so that every API process serves a rendering
once made (``api.pdf.Renderer`` keeps them in memory too). A row is served only under the digest
it was made for: what the PDF shows is in the digest, so a changed credential never gets an old
PDF. Writing a newer rendering replaces the row; when two renderings of different contents race,
the loser's next read just renders again."""

from __future__ import annotations

from sqlalchemy import Engine, select

from store.db import upsert_insert, utcnow, write_connection
from store.tables import CredentialPdf

_TABLE = CredentialPdf.__table__  # type: ignore[attr-defined]


def kept_pdf(engine: Engine, credential_id: str, content_digest: str) -> bytes | None:
    """The PDF rendered of this credential for exactly this content, if one is kept."""
    with engine.connect() as conn:
        found = conn.execute(
            select(_TABLE.c.pdf).where(
                _TABLE.c.credential_id == credential_id, _TABLE.c.content_digest == content_digest
            )
        ).scalar_one_or_none()
    return bytes(found) if found is not None else None


def keep_pdf(engine: Engine, credential_id: str, content_digest: str, pdf: bytes) -> None:
    """Keep ``pdf`` as the credential's rendering of that content, replacing an earlier one."""
    values = {"content_digest": content_digest, "pdf": pdf, "rendered_at": utcnow()}
    with write_connection(engine) as conn:
        insert = upsert_insert(conn.dialect.name)(_TABLE).values(credential_id=credential_id, **values)
        conn.execute(insert.on_conflict_do_update(index_elements=["credential_id"], set_=values))
