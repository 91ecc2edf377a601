"""The suite's own structure: test modules import helpers from tests/support (or fixtures from a
conftest), never from another test module; and the helpers every stack relies on."""

from __future__ import annotations

import socket
from pathlib import Path

from tests.support.imports import imported_modules
from tests.support.ports import free_port

TESTS = Path(__file__).resolve().parent
while TESTS.name != "tests":  # this module may sit in a layer directory
    TESTS = TESTS.parent


def _is_test_module(name: str) -> bool:
    return name.startswith("tests.") and name.rsplit(".", 1)[-1].startswith("test_")


def test_no_test_module_imports_another() -> None:
    offenders = {
        str(path.relative_to(TESTS)): sorted(m for m in modules if _is_test_module(m))
        for path, modules in imported_modules(sorted(TESTS.rglob("test_*.py"))).items()
    }
    assert {k: v for k, v in offenders.items() if v} == {}


def test_the_support_package_holds_no_tests() -> None:
    support = TESTS / "support"
    assert (support / "__init__.py").exists()
    assert not list(support.rglob("test_*.py"))
    for path, modules in imported_modules(sorted(support.rglob("*.py"))).items():
        assert not [m for m in modules if _is_test_module(m)], path  # nor does it reach into one


def test_the_check_sees_an_import_of_a_test_module(tmp_path: Path) -> None:
    bad = tmp_path / "test_bad.py"
    bad.write_text("from tests.workflows.test_workflow import decide\nfrom tests import test_cli\n")
    assert {m for m in imported_modules([bad])[bad] if _is_test_module(m)} == {
        "tests.workflows.test_workflow",
        "tests.test_cli",
    }


def test_free_ports_are_never_handed_out_twice() -> None:
    # Taken one after another, bound and closed, the kernel's ephemeral ports repeat a few times
    # in 500 draws; a stack given the same port twice fails to start (seen in CI: the API's port
    # was also Temporal's metrics port).
    ports = [free_port() for _ in range(500)]
    assert len(set(ports)) == len(ports)
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", ports[-1]))  # free when handed out
