"""A DOCUMENT credential's own PDF, given inline in ``POST /request`` (issue 36, ``CredentialIn.pdf``;
migration 0025): kept as an approval version keeps a DOCUMENT approval's PDF, read by the subject on
the approval page and signed by its digest in the credential's first data item. Re-exported by
``store.tables``. Every schema change comes with an Alembic revision in migrations/versions."""

from __future__ import annotations

from sqlalchemy import Column, LargeBinary
from sqlmodel import Field, SQLModel


class CredentialDocument(SQLModel, table=True):
    """The PDF a request credential was created with (never changed), by credential id."""

    __tablename__ = "credential_document"
    credential_id: str = Field(foreign_key="credential.id", primary_key=True, max_length=24)
    digest_sri: str = Field(max_length=100)  # the digest the credential's data item signs
    pdf: bytes = Field(sa_column=Column(LargeBinary, nullable=False))
