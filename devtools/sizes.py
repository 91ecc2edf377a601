"""The size check of ``make lint`` (issue 33): no module over ``MAX_MODULE_LINES`` lines and no
function over ``MAX_FUNCTION_LINES`` lines in the project's Python.

``python -m devtools.sizes [ROOT]`` walks every directory of the project (ROOT, by default the
current directory) for ``.py`` files, leaving out the virtualenv, tool caches and other hidden
directories, ``var``, ``tmp``, ``node_modules`` and the Alembic revisions
(``store/migrations/versions``, generated one per schema change). A module's size is its number
of lines; a function's (or method's, nested ones included) is from its ``def`` line to its last
line, decorators excluded (``ast``: ``end_lineno - lineno + 1``).

Each offender is printed as ``path:line: ...`` and the check fails (exit status 1). Under
``tests/`` only the module rule applies: a test reads as one scenario, however long.
``KNOWN_EXCEPTIONS`` names offenders allowed for a while (none today); an entry that no longer
offends is reported, so that it is removed.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

MAX_MODULE_LINES = 500
MAX_FUNCTION_LINES = 60

# directories never walked (besides hidden ones: .venv, .git, the tools' caches)
SKIPPED_DIRS = frozenset({"var", "tmp", "node_modules", "__pycache__", "build"})
SKIPPED_PATHS = frozenset({"store/migrations/versions"})  # generated revisions

TESTS_DIR = "tests"  # the function rule does not apply to tests; the module rule does

# Offenders allowed for a while (a module as its path, a function as "path::qualified name"),
# each with the reason beside it; empty since issue 33 split the last ones.
KNOWN_EXCEPTIONS: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Offender:
    path: str  # relative to the root, with forward slashes
    line: int
    name: str  # "" for a module, else the function's qualified name
    lines: int

    @property
    def key(self) -> str:
        """How ``KNOWN_EXCEPTIONS`` names it."""
        return f"{self.path}::{self.name}" if self.name else self.path

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}"
        if self.name:
            return f"{where}: function {self.name} is {self.lines} lines (max {MAX_FUNCTION_LINES})"
        return f"{where}: module is {self.lines} lines (max {MAX_MODULE_LINES})"


@dataclass
class Report:
    failing: list[Offender] = field(default_factory=list)
    excepted: list[Offender] = field(default_factory=list)  # in KNOWN_EXCEPTIONS
    stale: list[str] = field(default_factory=list)  # exceptions that no longer offend

    @property
    def ok(self) -> bool:
        return not self.failing


def python_files(root: Path, directory: Path | None = None) -> Iterator[Path]:
    """Every ``.py`` file of the project under ``root``, in a stable order."""
    for path in sorted((directory or root).iterdir()):
        if path.is_dir():
            skipped = path.name.startswith(".") or path.name in SKIPPED_DIRS
            if not (skipped or path.relative_to(root).as_posix() in SKIPPED_PATHS):
                yield from python_files(root, path)
        elif path.suffix == ".py":
            yield path


def functions(
    tree: ast.AST, prefix: str = ""
) -> Iterator[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function of ``tree`` with its qualified name (``Class.method``, ``outer.inner``)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            yield f"{prefix}{node.name}", node
            yield from functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            yield from functions(node, f"{prefix}{node.name}.")
        else:
            yield from functions(node, prefix)


def offenders(root: Path, path: Path) -> Iterator[Offender]:
    """The module, if it is too long, and each function of it that is too long (but in tests)."""
    relative = path.relative_to(root).as_posix()
    text = path.read_text(encoding="utf-8")
    count = len(text.splitlines())
    if count > MAX_MODULE_LINES:
        yield Offender(relative, 1, "", count)
    if in_tests(relative):
        return
    for name, node in functions(ast.parse(text, filename=relative)):
        size = (node.end_lineno or node.lineno) - node.lineno + 1
        if size > MAX_FUNCTION_LINES:
            yield Offender(relative, node.lineno, name, size)


def in_tests(relative: str) -> bool:
    return relative.split("/", 1)[0] == TESTS_DIR


def check(root: Path, exceptions: frozenset[str] | None = None) -> Report:
    """What is too long under ``root``; ``exceptions``: ``KNOWN_EXCEPTIONS`` unless given."""
    exceptions = KNOWN_EXCEPTIONS if exceptions is None else exceptions
    report = Report()
    for path in python_files(root):
        for found in offenders(root, path):
            if found.key in exceptions:
                report.excepted.append(found)
            else:
                report.failing.append(found)
    seen = {found.key for found in report.excepted}
    report.stale = sorted(exceptions - seen)
    return report


def render(report: Report) -> str:
    lines = [str(found) for found in report.failing]
    if report.excepted:
        lines.append("allowed for a while (KNOWN_EXCEPTIONS):")
        lines += [f"  {found}" for found in report.excepted]
    for key in report.stale:
        lines.append(f"KNOWN_EXCEPTIONS names {key}, which is no longer too long: remove it")
    if report.failing:
        lines.append(
            f"{len(report.failing)} over the limits: modules at most {MAX_MODULE_LINES} lines, "
            f"functions at most {MAX_FUNCTION_LINES} (devtools/sizes.py)"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    root = Path(args[0] if args else ".").resolve()
    report = check(root)
    out = render(report)
    if out:
        print(out)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
