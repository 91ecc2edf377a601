"""The size check of ``make lint`` (devtools/sizes.py): a module over 500 lines or a function over
60 fails it, with the file and line of each; at the limits it passes. Tests are held to the module
rule only, generated and tool directories are not walked, and the
known exceptions are allowed and reported once they no longer offend."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools import sizes

NONE: frozenset[str] = frozenset()


@pytest.fixture(autouse=True)
def no_known_exceptions(monkeypatch: pytest.MonkeyPatch) -> None:
    """``main`` checks these directories with no exceptions (the project's name its own files)."""
    monkeypatch.setattr(sizes, "KNOWN_EXCEPTIONS", NONE)


def module(lines: int) -> str:
    return "x = 0\n" * lines


def function(name: str, lines: int, indent: str = "", decorators: int = 0) -> str:
    """A function of ``lines`` lines from its ``def`` to its end, under ``decorators`` lines."""
    body = f"{indent}    x = 1\n" * (lines - 1)
    return f"{indent}@decorator\n" * decorators + f"{indent}def {name}() -> None:\n" + body


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_a_module_over_500_lines_fails_with_its_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "pkg/long.py", module(501))
    write(tmp_path, "pkg/short.py", module(500))
    report = sizes.check(tmp_path, NONE)
    assert [(o.path, o.line, o.name, o.lines) for o in report.failing] == [("pkg/long.py", 1, "", 501)]
    assert not report.ok
    assert sizes.main([str(tmp_path)]) == 1
    assert "pkg/long.py:1: module is 501 lines (max 500)" in capsys.readouterr().out


def test_a_function_over_60_lines_fails_with_its_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    text = (
        "class Outer:\n"
        + function("long_method", 61, indent="    ", decorators=2)
        + function("top", 60, decorators=3)
        + "def nests() -> None:\n"
        + function("inner", 61, indent="    ")
    )
    write(tmp_path, "pkg/funcs.py", text)
    report = sizes.check(tmp_path, NONE)
    found = [(o.path, o.line, o.name, o.lines) for o in report.failing]
    # the method's def is on line 4, after its two decorators; "top" is 60 lines: at the limit;
    # a nested function counts on its own, and in the one around it
    assert found == [
        ("pkg/funcs.py", 4, "Outer.long_method", 61),
        ("pkg/funcs.py", 128, "nests", 62),
        ("pkg/funcs.py", 129, "nests.inner", 61),
    ]
    assert sizes.main([str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "pkg/funcs.py:4: function Outer.long_method is 61 lines (max 60)" in out
    assert "pkg/funcs.py:129: function nests.inner is 61 lines (max 60)" in out


def test_modules_and_functions_at_the_limits_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    write(tmp_path, "pkg/at_limit.py", function("f", 60, decorators=5) + module(435))
    write(tmp_path, "script.py", function("g", 12))
    assert len((tmp_path / "pkg/at_limit.py").read_text().splitlines()) == 500
    report = sizes.check(tmp_path, NONE)
    assert report.ok and report.failing == []
    assert sizes.main([str(tmp_path)]) == 0
    assert capsys.readouterr().out == ""


def test_tests_keep_long_functions_but_not_long_modules(tmp_path: Path) -> None:
    write(tmp_path, "tests/test_scenario.py", function("test_long", 120) + module(300))
    assert sizes.check(tmp_path, NONE).ok
    write(tmp_path, "tests/test_long.py", function("test_long", 120) + module(400))
    report = sizes.check(tmp_path, NONE)
    assert [(o.path, o.name, o.lines) for o in report.failing] == [("tests/test_long.py", "", 520)]
    assert "tests/test_long.py:1: module is 520 lines" in sizes.render(report)


def test_generated_and_tool_directories_are_not_walked(tmp_path: Path) -> None:
    for skipped in (".venv/lib/big.py", "var/x.py", "tmp/x.py", "store/migrations/versions/0001_x.py"):
        write(tmp_path, skipped, module(900))
    write(tmp_path, "store/migrations/env.py", module(501))
    report = sizes.check(tmp_path, NONE)
    assert [o.path for o in report.failing] == ["store/migrations/env.py"]


def test_known_exceptions_are_allowed_and_reported_once_gone(tmp_path: Path) -> None:
    write(tmp_path, "api/big.py", module(501))
    write(tmp_path, "api/app.py", function("create_app", 61))
    known = frozenset({"api/big.py", "api/app.py::create_app", "services/operators.py::timeline"})
    report = sizes.check(tmp_path, known)
    assert report.ok
    assert sorted(o.key for o in report.excepted) == ["api/app.py::create_app", "api/big.py"]
    assert report.stale == ["services/operators.py::timeline"]
    assert "KNOWN_EXCEPTIONS names services/operators.py::timeline" in sizes.render(report)
