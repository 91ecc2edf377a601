"""JavaScript packages the tests use, from the npm registry: each folder's ``package-lock.json``
installed with ``npm ci`` on the first run (one install at a time across the xdist workers), then
used offline. Without Node.js the tests that need it are skipped with a message."""

from __future__ import annotations

import fcntl
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest


def _npm_ci_needed(folder: Path) -> bool:
    installed = folder / "node_modules" / ".package-lock.json"  # written by npm ci / install
    lock = folder / "package-lock.json"
    return not installed.exists() or lock.stat().st_mtime > installed.stat().st_mtime


def npm_installed(folder: Path, needed_for: str) -> str:
    """The node executable, with ``folder``'s node_modules installed from its lock file; skips the
    test (saying ``needed_for``) when Node.js is not on PATH."""
    node, npm = shutil.which("node"), shutil.which("npm")
    if node is None or npm is None:
        pytest.skip(f"Node.js (node and npm) is not on PATH: {needed_for} skipped")
    with open(Path(tempfile.gettempdir()) / f"mandatum-{folder.name}-npm-ci.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _npm_ci_needed(folder):
            done = subprocess.run(
                [npm, "ci", "--no-audit", "--no-fund"],
                cwd=folder,
                capture_output=True,
                text=True,
                timeout=600,
                check=False,
            )
            if done.returncode != 0:
                pytest.fail(f"npm ci in {folder.name}/ failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return node
