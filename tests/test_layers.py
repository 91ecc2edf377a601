"""The layering holds: the import contracts are kept, the worker runs without the web stack, and
actors spell themselves the one way audit records store them."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from core.actors import ORGANIZATION, SYSTEM, TEMPORAL, Actor, ActorKind
from core.kinds import IDENTITY_SOURCES, IdentitySource, RequestStatus, SecurityLevel, UpdateRefusal
from wire.models import CreateRequestIn

ROOT = Path(__file__).resolve().parents[1]


def test_importing_the_worker_loads_no_web_framework() -> None:
    probe = (
        "import sys, worker\n"
        "web = {'fastapi', 'starlette', 'uvicorn', 'api'}\n"
        "loaded = sorted(m for m in sys.modules if m.split('.')[0] in web)\n"
        "print(','.join(loaded))\n"
    )
    out = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
    # the probe can see a web framework when one is loaded: the API's app module loads FastAPI
    api = subprocess.run(
        [sys.executable, "-c", probe.replace("import sys, worker", "import sys, api.app")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    assert "fastapi" in api.stdout.split(",")


def test_the_import_contracts_are_kept() -> None:
    linter = Path(sys.executable).with_name("lint-imports")
    out = subprocess.run([str(linter), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout
    # every layer named in the docs is under contract
    for name in ("Layers", "FastAPI", "deterministic", "cycle", "only through services"):
        assert name in out.stdout


@pytest.mark.parametrize(
    ("actor", "spelled"),
    [
        (Actor.api_key("6650f0c1a2b3c4d5e6f70812"), "apiKey:6650f0c1a2b3c4d5e6f70812"),
        (Actor.subject("s-1"), "subject:s-1"),
        (Actor.shell_operator("alice"), "operator:alice"),
        (Actor(ActorKind.PROVIDER, "development"), "provider:development"),
        (Actor(ActorKind.MEMBER, "m1"), "member:m1"),
        (Actor(ActorKind.DASHBOARD_OPERATOR, "st1"), "staff:st1"),
        (TEMPORAL, "temporal"),
        (SYSTEM, "system"),
        (ORGANIZATION, "organization"),
    ],
)
def test_an_actor_is_stored_as_one_spelling_and_read_back(actor: Actor, spelled: str) -> None:
    assert str(actor) == spelled
    assert Actor.parse(spelled) == actor


@pytest.mark.parametrize(
    ("kind", "ident"),
    [
        (ActorKind.API_KEY, None),  # a key actor names its key
        (ActorKind.SHELL_OPERATOR, ""),
        (ActorKind.TEMPORAL, "x"),  # the service's own actors name nobody
        (ActorKind.SUBJECT, "a:b"),  # ':' would make the spelling ambiguous
        (ActorKind.MEMBER, "x\n"),
        (ActorKind.DASHBOARD_OPERATOR, "y" * 201),
    ],
)
def test_an_actor_that_cannot_be_spelled_unambiguously_is_refused(kind: ActorKind, ident: str | None) -> None:
    with pytest.raises(ValueError):
        Actor(kind, ident)


def test_kinds_are_their_stored_strings() -> None:
    assert RequestStatus.CANCELED == "CANCELED" and f"{RequestStatus.CANCELED}" == "CANCELED"
    assert UpdateRefusal("too_soon") is UpdateRefusal.TOO_SOON


def test_every_level_but_contact_names_the_one_source_of_identity_it_requires() -> None:
    """One table (``core.kinds.IDENTITY_SOURCES``) serves the workflow, the store, the services and
    the pages; the wire accepts exactly the levels it knows."""
    assert set(IDENTITY_SOURCES) == set(SecurityLevel) - {SecurityLevel.CONTACT}
    assert IDENTITY_SOURCES[SecurityLevel.ORGANIZATION_KYC] is IdentitySource.ORGANIZATION
    assert IDENTITY_SOURCES["PLATFORM_REVALIDATION"] is IdentitySource.PLATFORM  # a stored string looks it up
    assert CreateRequestIn.model_fields["securityLevel"].annotation is SecurityLevel
