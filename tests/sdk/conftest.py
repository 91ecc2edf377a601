"""Fixtures of the SDK tests: each published release, imported on its own (tests.support.sdk).

``sdk`` is module-scoped and parametrized by release, so a module runs all its tests with one
release, then (the first one purged from the process) all with the next. A test about one release
only says so with ``@only(RELEASE_120)`` (``sdk`` parametrized with that release alone).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.live_stack import LiveStack
from tests.support.sdk import RELEASES, Sdk, loaded


@pytest.fixture(scope="module", params=RELEASES, ids=[r.id for r in RELEASES])
def sdk(request: pytest.FixtureRequest, live: LiveStack) -> Iterator[Sdk]:
    """The release, imported for this module's tests (after ``live``: a skipped stack loads none)."""
    with loaded(request.param) as imported:
        yield imported
