"""What an organization imported about its users (``POST /user``, issue 36; migration 0020),
re-exported by ``store.tables``. Every schema change comes with an Alembic revision in
migrations/versions.

A user is a ``Subject`` (one per organization and contact): the organization's reference of it
(``internalId``) is on the subject, since requests show it; what only the organization gave and
nobody reads back through the API is here, encrypted under the master key
(``core.secretbox.SecretCipher``): the identity to match identity checks against (never returned
by the API) and the extra contacts (the organization's own notes of how else it reaches the
person; never contacted, never searched)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Column, LargeBinary
from sqlmodel import Field, SQLModel


class SubjectProfile(SQLModel, table=True):
    __tablename__ = "subject_profile"
    subject_id: str = Field(foreign_key="subject.id", primary_key=True, max_length=36)
    organization_id: str = Field(foreign_key="organization.id", index=True, max_length=24)
    # JSON {fullName, birth, docId, countryAlpha3, ...} as imported (wire.users.IdentityIn), encrypted
    identity_ciphertext: bytes | None = Field(default=None, sa_column=Column(LargeBinary, nullable=True))
    # JSON list of normalized contacts (at most wire.users.MAX_EXTRA_CONTACTS), encrypted
    extra_contacts_ciphertext: bytes | None = Field(
        default=None, sa_column=Column(LargeBinary, nullable=True)
    )
    created_at: datetime
    updated_at: datetime
