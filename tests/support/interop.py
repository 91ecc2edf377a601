"""Digital Bazaar's JavaScript verifier in interop/ (fixture ``interop_node``) and the jobs it runs."""

from __future__ import annotations

import copy
import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.npm import npm_installed

ROOT = Path(__file__).resolve().parents[2]  # the project


INTEROP = ROOT / "interop"


Job = dict[str, Any]


@pytest.fixture(scope="session")
def interop_node() -> str:
    """The node executable, with interop/node_modules installed from the lock file."""
    return npm_installed(
        INTEROP, "eddsa-jcs-2022 interoperability tests against Digital Bazaar's JavaScript implementation"
    )


def js_verify(job: Job | list[Job]) -> Any:
    """Run interop/verify.mjs on one job (-> one result) or a list of jobs (-> list of results).

    A result is ``{"verified": bool, "errors": [str]}``.
    """
    node = shutil.which("node") or "node"
    done = subprocess.run(
        [node, str(INTEROP / "verify.mjs")],
        input=json.dumps(job),
        cwd=INTEROP,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, f"verify.mjs failed ({done.returncode}):\n{done.stderr}"
    return json.loads(done.stdout)


def _tampered(document: dict[str, Any], *path: str | int, value: Any) -> dict[str, Any]:
    changed = copy.deepcopy(document)
    target: Any = changed
    for name in path[:-1]:
        target = target[name]
    assert target[path[-1]] != value, "tampering must change the value"
    target[path[-1]] = value
    return changed


def _assert_verified(result: dict[str, Any]) -> None:
    assert result["verified"] is True, result["errors"]
    assert result["errors"] == []


def _assert_rejected(result: dict[str, Any], *expected: str) -> None:
    assert result["verified"] is False
    text = " ".join(result["errors"])
    for fragment in expected:
        assert fragment in text, result["errors"]
