"""Without ``../shared/vectors`` the tests that need a vector skip, naming the path; nothing fails to
collect."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.vectors import PROJECT, VECTORS, load_vector, vector_names, vector_params, vector_path

# the modules that read vectors while collecting or in pure tests (test_interop skips the same way)
USERS = ["test_multikey.py", "test_eddsa_jcs.py", "test_webhook_envelope.py"]


def test_the_path_is_the_shared_checkout_beside_the_project() -> None:
    if "MANDATUM_TEST_VECTORS" not in os.environ:
        assert VECTORS == PROJECT.parent / "shared" / "vectors"


def test_each_helper_skips_naming_the_missing_path(tmp_path: Path) -> None:
    missing = tmp_path / "nowhere"
    for call in (
        lambda: vector_path("jcs", "input", root=missing),
        lambda: load_vector("a.json", root=missing),
    ):
        with pytest.raises(pytest.skip.Exception) as info:
            call()
        assert str(missing) in str(info.value)
    for params in (
        vector_params("did-key", "v.json", root=missing),
        vector_names("jcs", "input", root=missing),
    ):
        [param] = params
        [mark] = param.marks
        assert mark.name == "skip" and str(missing / "") in mark.kwargs["reason"]


def test_the_vector_tests_skip_rather_than_fail_to_collect(tmp_path: Path) -> None:
    missing = tmp_path / "no-shared" / "vectors"
    paths = [str(p) for name in USERS for p in (PROJECT / "tests").rglob(name)]
    assert len(paths) == len(USERS)
    done = subprocess.run(
        # --noconftest: these modules use no fixture of the conftest, whose imports (the whole app)
        # would be most of the run
        [sys.executable, "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", "--noconftest", *paths],
        env={**os.environ, "MANDATUM_TEST_VECTORS": str(missing)},
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    tail = done.stdout[-3000:]
    assert done.returncode == 0, tail + done.stderr[-2000:]  # 1 if a test failed, 2 if one did not collect
    summary = done.stdout.strip().splitlines()[-1]
    assert "skipped" in summary and "error" not in summary and "failed" not in summary, summary
    assert f"test vectors not found at {missing}" in done.stdout, tail
