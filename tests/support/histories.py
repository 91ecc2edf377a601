"""Recorded workflow histories (tests/histories) for the Replayer."""

from __future__ import annotations

from pathlib import Path

from temporalio.client import WorkflowHistory

HISTORIES = Path(__file__).resolve().parents[1] / "histories"


def load(path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(f"credential-request:{path.stem}", path.read_text())
