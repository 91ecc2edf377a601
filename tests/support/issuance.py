"""Issuance with a patched workflow version."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.support.histories import HISTORIES, load
from tests.support.workflow import activity_runs


def patch_and_issuance(name: str) -> tuple[list[str], list[str]]:
    """The patch ids marked in a recorded history, and its activities in order (local activities:
    ``local_activities``)."""
    patches, activities = [], []
    for e in json.loads((HISTORIES / f"{name}.json").read_text())["events"]:
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            activities.append(e["activityTaskScheduledEventAttributes"]["activityType"]["name"])
        elif e["eventType"] == "EVENT_TYPE_MARKER_RECORDED":
            marker = e["markerRecordedEventAttributes"]
            if marker["markerName"] == "core_patch":
                patches.append(json.loads(payload_text(marker["details"]["patch-data"]))["id"])
    return patches, activities


def local_activities(name: str) -> list[str]:
    """The local activities a recorded history ran, in order."""
    return [run.type for run in activity_runs(load(HISTORIES / f"{name}.json").events) if run.local]


def payload_text(payloads: dict[str, Any]) -> str:
    """The first payload of a recorded history's ``{"payloads": [...]}``, as text."""
    return base64.b64decode(payloads["payloads"][0]["data"]).decode()
