"""What the credentials of a request made of approvals read and write of them: which approval
version each came from, a FORM's values given by its subject, a DOCUMENT's PDF (an approval
version's, or the credential's own given inline)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine
from sqlmodel import Session, col, select

from store.db import read_session, write_session
from store.request_records import OPEN_CREDENTIAL_STATES
from store.tables import ApprovalVersion, Credential, CredentialApproval, CredentialDocument, Decision


def sources_of(engine: Engine, credential_ids: list[str]) -> dict[str, CredentialApproval]:
    """The approval each of these credentials was made from, by credential id."""
    if not credential_ids:
        return {}
    with read_session(engine) as session:
        rows = session.exec(
            select(CredentialApproval).where(col(CredentialApproval.credential_id).in_(credential_ids))
        )
        return {r.credential_id: r for r in rows}


def fill_form(
    engine: Engine, request_id: str, credential_id: str, values: dict[str, Any], shown: dict[str, str]
) -> bool:
    """A FORM credential's values, once: written into its data items (by field name) and kept
    typed on its ``credential_approval``, while the credential is open and nobody decided on it.
    True when the values are stored (now or by an earlier submission), False when it is closed."""
    with write_session(engine) as session:
        credential = session.exec(
            select(Credential)
            .where(Credential.id == credential_id, Credential.request_id == request_id)
            .with_for_update()
        ).first()
        source = session.get(CredentialApproval, credential_id)
        if credential is None or source is None or source.type != "FORM":
            return False
        if (
            credential.status not in OPEN_CREDENTIAL_STATES
            or session.exec(select(Decision.id).where(Decision.credential_id == credential_id)).first()
        ):
            return False
        if source.values is not None:
            return True  # given before: a second submission changes nothing
        data = []
        for item in credential.data or []:
            definition = (item.get("fields") or [{}])[0]
            name = definition.get("name") if str(item.get("type", "")).startswith("FORM:") else None
            data.append({**item, "value": shown[name]} if name in shown else item)
        credential.data = data
        source.values = values
        session.add(credential)
        session.add(source)
        return True


def _inline(session: Session, column: Any, request_id: str, credential_id: str) -> Any:
    """``column`` of the PDF a credential of this request was given inline, or None."""
    return session.exec(
        select(column)
        .join(Credential, col(Credential.id) == col(CredentialDocument.credential_id))
        .where(Credential.id == credential_id, Credential.request_id == request_id)
    ).first()


def _of_version(session: Session, column: Any, request_id: str, credential_id: str, *where: Any) -> Any:
    """``column`` of the approval version a credential of this request was made from, or None."""
    return session.exec(
        select(column)
        .join(CredentialApproval, col(CredentialApproval.version_id) == col(ApprovalVersion.id))
        .join(Credential, col(Credential.id) == col(CredentialApproval.credential_id))
        .where(Credential.id == credential_id, Credential.request_id == request_id, *where)
    ).first()


def document_of_credential(engine: Engine, request_id: str, credential_id: str) -> bytes | None:
    """The PDF of a DOCUMENT credential of this request: the PDF it was given inline
    (``CredentialDocument``), else that of the approval version it was made from."""
    with read_session(engine) as session:
        inline = _inline(session, CredentialDocument.pdf, request_id, credential_id)
        if isinstance(inline, bytes):
            return inline
        row = _of_version(session, ApprovalVersion.pdf, request_id, credential_id)
        return row if isinstance(row, bytes) else None


def document_digest_of_credential(engine: Engine, request_id: str, credential_id: str) -> str | None:
    """The ``digestSRI`` of the PDF a DOCUMENT credential of this request signs: the one it was
    given inline (``CredentialDocument``), else that of the DOCUMENT approval version it was made
    from; None for any other credential (data items only, or made of another type)."""
    with read_session(engine) as session:
        inline = _inline(session, CredentialDocument.digest_sri, request_id, credential_id)
        if isinstance(inline, str):
            return inline
        content = _of_version(
            session, ApprovalVersion.content, request_id, credential_id, CredentialApproval.type == "DOCUMENT"
        )
    digest = ((content or {}).get("pdf") or {}).get("digestSRI") if isinstance(content, dict) else None
    return digest if isinstance(digest, str) else None
