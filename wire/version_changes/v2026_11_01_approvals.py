"""2026-11-01's approvals and workflows (docs/approvals.md), undone towards 2026-09-01: SDK 1.2.0's
``ResourcesEntity`` and ``GroupsEntity`` (1.0.5 reads the same shapes).

An approval's ``content`` was one string: a FORM's form schema as JSON text (``{"fields": [...]}``),
a JSON approval's object and a POLICY's action (``{id, userParams}``) as JSON text, a DOCUMENT's
reference (the path its PDF is fetched from). ``placements`` were lists of lists: a DOCUMENT's
placements grouped by page (``pageIndex`` order; each as the newest version shows it, in percent of
the page with its ``signer``), null for the other types.
"""

from __future__ import annotations

import json
from typing import Any

from wire.versioning import Body, VersionChange

V2026_11_01 = "2026-11-01"


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _resource(approval: dict[str, Any]) -> dict[str, Any]:
    content = approval.get("content") or {}
    kind = approval.get("type")
    placements = None
    if kind == "FORM":
        text: str | None = _text({"fields": content.get("fields", [])})
    elif kind == "JSON":
        text = _text(content.get("json"))
    elif kind == "POLICY":
        text = _text(content.get("action"))
    else:
        text = (content.get("pdf") or {}).get("url")
        pages: dict[int, list[Any]] = {}
        for placement in content.get("placements") or ():
            pages.setdefault(placement.get("pageIndex", 0), []).append(placement)
        placements = [pages[i] for i in sorted(pages)]
    return {
        "id": approval["id"],
        "name": approval["name"],
        "type": kind,
        "active": approval["active"],
        "internalId": approval.get("internalId"),
        "description": approval.get("description"),
        "groupIds": approval.get("workflowIds", []),
        "content": text,
        "placements": placements,
        "updatedAt": approval["updatedAt"],
    }


def _approvals_were_resources(body: Body) -> Body:
    return {**body, "data": [_resource(a) for a in body.get("data", [])]}


def _workflows_were_groups(body: Body) -> Body:
    return {
        **body,
        "data": [
            {
                "id": w["id"],
                "name": w["name"],
                "description": w.get("description"),
                "active": w["active"],
                "resources": w.get("approvals", []),
                "updatedAt": w["updatedAt"],
            }
            for w in body.get("data", [])
        ],
    }


VERSION_CHANGES: list[VersionChange] = [
    VersionChange(
        V2026_11_01,
        "an approval's content is an object by its type, with its version (was a string: a resource)",
        "list_approvals",
        to_previous=_approvals_were_resources,
    ),
    VersionChange(
        V2026_11_01,
        "a workflow lists its approvals (was a group listing resources)",
        "list_workflows",
        to_previous=_workflows_were_groups,
    ),
]
