"""An empty database of either backend for the migration tests, which build their own schema."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import PG_AVAILABLE, _postgres_database


@contextmanager
def fresh_database(backend: str, tmp_path: Path) -> Iterator[str]:
    """A SQLite file under ``tmp_path``, or a throw-away PostgreSQL database (skipped without one)."""
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'factor.db'}"
        return
    if not PG_AVAILABLE:
        pytest.skip("PostgreSQL is not reachable")
    with _postgres_database() as url:
        yield url
