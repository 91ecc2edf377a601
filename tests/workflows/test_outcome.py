"""The business outcome operators filter closed requests by (``MandatumOutcome``)."""

from __future__ import annotations

import pytest

from core.kinds import RequestOutcome
from workflows.credential_request import outcome_of


@pytest.mark.parametrize(
    ("status", "decisions", "identity_failed", "outcome"),
    [
        ("PENDING", [True], False, None),
        ("CANCELED", [], False, RequestOutcome.CANCELED),
        ("EXPIRED", [True], False, RequestOutcome.EXPIRED),
        ("COMPLETED", [True, True], False, RequestOutcome.APPROVED),
        ("COMPLETED", [False, False], False, RequestOutcome.REJECTED),
        ("COMPLETED", [True, False], False, RequestOutcome.PARTLY_APPROVED),
        ("COMPLETED", [False, False], True, RequestOutcome.IDENTITY_FAILED),
        ("COMPLETED", [True, False], True, RequestOutcome.IDENTITY_FAILED),
    ],
)
def test_outcome_of(
    status: str, decisions: list[bool], identity_failed: bool, outcome: RequestOutcome | None
) -> None:
    assert outcome_of(status, decisions, identity_failed) == outcome
