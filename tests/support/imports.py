"""What Python modules import, read from their source: ``imported_modules(paths)``.

The parsing runs in a child process (``python -m tests.support.imports PATH…``, printing JSON): on
Python 3.11, ``ast.parse`` fails with "SystemError: AST constructor recursion depth mismatch" when
another thread of the same process builds AST objects at the same time (CPython gh-106905), and a
test process has such threads (Temporal workers re-importing modules through pytest's assertion
rewriter). The child has only its main thread.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _modules_in(path: str) -> list[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(Path(path).read_text(), path)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            # ``from tests.x import test_y`` names a module too
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return sorted(found)


def imported_modules(paths: Sequence[Path]) -> dict[Path, set[str]]:
    """Each file's imported module names (``from a import b`` gives ``a`` and ``a.b``)."""
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.imports", *map(str, paths)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    found = json.loads(done.stdout)
    return {path: set(found[str(path)]) for path in paths}


if __name__ == "__main__":
    print(json.dumps({path: _modules_in(path) for path in sys.argv[1:]}))
