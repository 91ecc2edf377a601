"""Issuance with a patched workflow version."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.support.histories import HISTORIES


def patch_and_issuance(name: str) -> tuple[list[str], list[str]]:
    """The patch ids marked in a recorded history, and its activities in order (local ones too)."""
    patches, activities = [], []
    for e in json.loads((HISTORIES / f"{name}.json").read_text())["events"]:
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED":
            activities.append(e["activityTaskScheduledEventAttributes"]["activityType"]["name"])
        elif e["eventType"] == "EVENT_TYPE_MARKER_RECORDED":
            marker = e["markerRecordedEventAttributes"]
            if marker["markerName"] == "core_patch":
                patches.append(json.loads(_decode(marker["details"]["patch-data"]))["id"])
            elif marker["markerName"] == "core_local_activity":
                activities.append(json.loads(_decode(marker["details"]["data"]))["activity_type"])
    return patches, activities


def local_activities(name: str) -> list[str]:
    """The local activities a recorded history ran, in order."""
    events = json.loads((HISTORIES / f"{name}.json").read_text())["events"]
    return [
        json.loads(_decode(e["markerRecordedEventAttributes"]["details"]["data"]))["activity_type"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
        and e["markerRecordedEventAttributes"]["markerName"] == "core_local_activity"
    ]


def _decode(payloads: dict[str, Any]) -> str:
    return base64.b64decode(payloads["payloads"][0]["data"]).decode()
