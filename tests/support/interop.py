"""Digital Bazaar's JavaScript verifier in interop/ (fixture ``interop_node``) and the jobs it runs."""

from __future__ import annotations

import copy
import fcntl
import json
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the project


INTEROP = ROOT / "interop"


Job = dict[str, Any]


def _npm_ci_needed() -> bool:
    installed = INTEROP / "node_modules" / ".package-lock.json"  # written by npm ci / install
    lock = INTEROP / "package-lock.json"
    return not installed.exists() or lock.stat().st_mtime > installed.stat().st_mtime


@pytest.fixture(scope="session")
def interop_node() -> str:
    """The node executable, with interop/node_modules installed from the lock file."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(
            "Node.js (node and npm) is not on PATH: eddsa-jcs-2022 interoperability tests "
            "against Digital Bazaar's JavaScript implementation skipped"
        )
    # one npm ci at a time: the suite's xdist workers may all reach this fixture on a fresh clone
    with open(Path(tempfile.gettempdir()) / "mandatum-interop-npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _npm_ci_needed():
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=INTEROP,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"npm ci in interop/ failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return node


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
