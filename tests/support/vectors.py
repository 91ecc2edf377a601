"""The shared test vectors (W3C eddsa-jcs-2022 and JCS, did:key, Standard Webhooks): ``../shared/vectors``
beside the project, as CI and the developers' machines check it out. Where that directory is missing,
the tests that need a vector skip with a message naming the path (never a collection error)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parents[2]
# the one place that names the path (MANDATUM_TEST_VECTORS points elsewhere: the suite's own test
# of a missing directory uses it)
VECTORS = Path(os.environ.get("MANDATUM_TEST_VECTORS") or PROJECT.parent / "shared" / "vectors")


def _missing(path: Path) -> str:
    return f"test vectors not found at {path} (../shared/vectors beside the project): skipped"


def vector_path(*parts: str, root: Path | None = None) -> Path:
    """``VECTORS/parts...``; the calling test is skipped, naming the path, when it does not exist."""
    path = (root or VECTORS).joinpath(*parts)
    if not path.exists():
        pytest.skip(_missing(path))
    return path


def load_vector(*parts: str, root: Path | None = None) -> Any:
    return json.loads(vector_path(*parts, root=root).read_text())


def vector_params(*parts: str, root: Path | None = None) -> list[Any]:
    """For ``parametrize`` at collection time: the JSON list in the file, or one parameter that skips
    with the missing path as its reason."""
    path = (root or VECTORS).joinpath(*parts)
    if not path.exists():
        return [pytest.param(None, marks=pytest.mark.skip(reason=_missing(path)), id="vectors-missing")]
    loaded: list[Any] = json.loads(path.read_text())
    return loaded


def vector_names(*parts: str, root: Path | None = None) -> list[Any]:
    """For ``parametrize``: the file names in the directory, sorted, or one parameter that skips."""
    path = (root or VECTORS).joinpath(*parts)
    if not path.is_dir():
        return [pytest.param(None, marks=pytest.mark.skip(reason=_missing(path)), id="vectors-missing")]
    return sorted(p.name for p in path.iterdir())
