"""What ``mandatum request show`` prints: a request as the dashboard's page of it shows it (its
subjects' progress, credentials, decisions, webhook events and audit records), as data for
``--json`` and as lines of text. Never a code, its hash or a link: only counts and times."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Any

from cli.common import echo
from trust.did import web_subject_did

if TYPE_CHECKING:  # services.requests loads the Temporal client: only the commands import it
    from services.requests import Detail
    from store.tables import Credential, Decision, RequestSubject, Subject


def _at(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _code(progress: Any) -> dict[str, Any] | None:
    code = progress.code if progress else None
    if code is None:
        return None
    return {
        "channel": code.channel,
        "sends": code.sends,
        "lastSentAt": _at(code.sent_at),
        "wrongTries": code.failures,
        "lockedAt": _at(code.locked_at),
        "confirmedAt": _at(code.verified_at),
        "deliveryError": code.delivery_error,
    }


def detail_data(found: Detail, public_url: str) -> dict[str, Any]:
    """The request as ``--json`` prints it."""
    bundle, req = found.bundle, found.bundle.request
    return {
        "id": req.id,
        "organizationId": req.organization_id,
        "name": req.name,
        "status": req.status,
        "securityLevel": req.security_level,
        "internalId": req.internal_id,
        "createdAt": _at(req.created_at),
        "expiresAt": _at(req.expires_at),
        "canceledAt": _at(req.canceled_at),
        "canceledBy": req.canceled_by,
        "resentFrom": req.resent_from,  # issue 32: sent again from, or as, another request
        "resentAs": bundle.resent_as,
        "workflowUrl": found.workflow_url,
        "subjects": [_subject(found, link, s, public_url) for link, s in bundle.subjects],
        "credentials": [_credential(c, bundle.decisions.get(c.id, [])) for c in bundle.credentials],
        "webhookEvents": [
            {
                "id": e.id,
                "eventType": e.event_type,
                "state": e.state,
                "attempts": e.attempts,
                "lastStatus": e.last_status,
                "lastError": e.last_error,
                "createdAt": _at(e.created_at),
            }
            for e in found.events
        ],
        "auditRecords": [
            {"type": r.type, "at": _at(r.created_at), "actor": r.actor, "credentialId": r.credential_id}
            for r in found.records
        ],
    }


def _subject(found: Detail, link: RequestSubject, s: Subject, public_url: str) -> dict[str, Any]:
    """A subject of the request with their code's state and identity checks."""
    return {
        "id": s.id,
        "did": web_subject_did(public_url, s.id),
        "contact": s.contact,
        "internalId": link.internal_id,
        "identity": s.identity_status,
        "code": _code(found.progress.get(s.id)),
        "identityChecks": [
            {
                "provider": c.provider,
                "status": c.status,
                "startedAt": _at(c.created_at),
                "message": c.message,
            }
            for c in (found.progress[s.id].checks if s.id in found.progress else [])
        ],
    }


def _credential(c: Credential, decisions: list[tuple[Decision, Subject]]) -> dict[str, Any]:
    """A credential of the request with its subjects' decisions."""
    return {
        "id": c.id,
        "type": c.resource_type,
        "name": c.name,
        "status": c.status,
        "internalId": c.internal_id,
        "mandateId": c.mandate_id,
        "decisions": [
            {
                "subjectId": s.id,
                "contact": s.contact,
                "accepted": d.accepted,
                "channel": d.channel,
                "surface": d.surface,
                "decidedAt": _at(d.decided_at),
            }
            for d, s in decisions
        ],
    }


def print_detail(data: dict[str, Any]) -> None:
    """The request as lines of text (the same data as ``--json``)."""
    echo(f"request {data['id']}  {data['status']}  {data['securityLevel']}  org {data['organizationId']}")
    for label, key in (("name", "name"), ("internalId", "internalId"), ("created", "createdAt")):
        echo(f"  {label:<10}  {data[key] or '-'}")
    echo(f"  {'expires':<10}  {data['expiresAt']}")
    if data["canceledAt"]:
        echo(f"  {'canceled':<10}  {data['canceledAt']} by {data['canceledBy']}")
    for label, key in (("sent from", "resentFrom"), ("sent as", "resentAs")):
        if data.get(key):
            echo(f"  {label:<10}  {data[key]}")
    echo(f"  {'workflow':<10}  {data['workflowUrl']}")
    echo("subjects")
    for s in data["subjects"]:
        echo(f"  {s['id']}  {s['contact']}  internalId {s['internalId'] or '-'}  identity {s['identity']}")
        code = s["code"]
        if code is None:
            echo("    code: none sent yet")
        else:
            state = ", ".join(
                part
                for part in (
                    f"confirmed {code['confirmedAt']}" if code["confirmedAt"] else "not confirmed",
                    f"LOCKED {code['lockedAt']}" if code["lockedAt"] else "",
                    f"delivery failed: {code['deliveryError']}" if code["deliveryError"] else "",
                )
                if part
            )
            echo(
                f"    code: {code['sends']} sent by {code['channel']}, last {code['lastSentAt']}, "
                f"{code['wrongTries']} wrong tries, {state}"
            )
        for check in s["identityChecks"]:
            echo(f"    identity check: {check['provider']} {check['status']} {check['startedAt']}")
    echo("credentials")
    for c in data["credentials"]:
        echo(f"  {c['id']}  {c['type']}  {c['name']}  {c['status']}  {c['mandateId'] or ''}".rstrip())
        for d in c["decisions"]:
            how = " · ".join(filter(None, (d["channel"], d["surface"])))
            verdict = "accepted" if d["accepted"] else "rejected"
            echo(f"    {d['contact']} {verdict} {how} {d['decidedAt']}")
    echo("webhook events" if data["webhookEvents"] else "webhook events: none")
    for e in data["webhookEvents"]:
        last = f"HTTP {e['lastStatus']}" if e["lastStatus"] else e["lastError"] or ""
        echo(f"  {e['id']}  {e['eventType']}  {e['state']}  attempts {e['attempts']}  {last}".rstrip())
    echo("audit records, newest first")
    for r in data["auditRecords"]:
        echo(f"  {r['at']}  {r['type']}  {r['actor'] or '-'}  {r['credentialId'] or ''}".rstrip())
