"""Running a benchmark of this directory as a file, the code it measures another tree's:
``PYTHONPATH=<tree> python <checkout>/bench/<name>.py``. Imports nothing of the project, so that it
can be imported (as ``file_mode``, ``bench/`` being first on the path) before ``bench`` is set up."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def run_as_file(file: str) -> None:
    """The import path for the benchmark ``file``: not ``bench/`` first (its ``trust.py`` is no trust
    package), this tree's root last (after ``PYTHONPATH``'s), and ``bench`` pinned to this directory."""
    sys.path.pop(0)
    sys.path.append(str(Path(file).resolve().parents[1]))
    pin_bench_package(Path(file).resolve().parent)


def pin_bench_package(here: Path) -> None:
    """``bench`` is the package in ``here``, whatever tree ``PYTHONPATH`` names for the rest: the
    other tree's ``bench`` may lack what this one imports (``bench.callgrind``), and the harness
    stays the same for both trees."""
    spec = importlib.util.spec_from_file_location(
        "bench", here / "__init__.py", submodule_search_locations=[str(here)]
    )
    assert spec is not None and spec.loader is not None
    sys.modules["bench"] = package = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(package)
