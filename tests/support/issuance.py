"""Issuance with a patched workflow version."""

from __future__ import annotations

import base64
import json
from typing import Any

from tests.support.histories import HISTORIES


def patch_and_issuance(name: str) -> tuple[list[str], list[str]]:
    """The patch ids marked in a recorded history, and its activities in order."""
    events = json.loads((HISTORIES / f"{name}.json").read_text())["events"]
    patches = [
        json.loads(_decode(e["markerRecordedEventAttributes"]["details"]["patch-data"]))["id"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_MARKER_RECORDED"
    ]
    activities = [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if e["eventType"] == "EVENT_TYPE_ACTIVITY_TASK_SCHEDULED"
    ]
    return patches, activities


def _decode(payloads: dict[str, Any]) -> str:
    return base64.b64decode(payloads["payloads"][0]["data"]).decode()
