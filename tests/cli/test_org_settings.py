"""``mandatum org set-portal`` (issue 32): the organization's id checked where it enters, the
setting saved and recorded with the operator running the command."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Engine

from core.settings import Settings
from store import audit, orgs
from tests.conftest import MASTER_KEY
from tests.support.api_client import Credentials
from tests.support.audit import chain
from tests.support.cli import operator_shell


@pytest.fixture
def shell(settings: Settings) -> Any:
    return operator_shell(settings, MASTER_KEY, "desk-pia")


def test_org_set_portal_turns_it_off_and_on(org: Credentials, engine: Engine, shell: Any) -> None:
    org_id = org.organization_id
    assert orgs.get_organization(engine, org_id).portal_enabled  # on by default
    bad = shell("org", "set-portal", "--org", "nope", "--off")
    assert bad.returncode == 1 and "--org" in bad.stderr
    off = shell("org", "set-portal", "--org", org_id, "--off")
    assert off.returncode == 0 and "keeps its mandates out of the portal" in off.stdout
    assert not orgs.get_organization(engine, org_id).portal_enabled
    on = shell("org", "set-portal", "--org", org_id, "--on")
    assert on.returncode == 0 and "shows its mandates in the subject's portal" in on.stdout
    records = [(r.actor, r.data) for r in chain(engine, org_id) if r.type == audit.SETTINGS_CHANGED]
    assert records == [
        ("operator:desk-pia", {"setting": "portalEnabled", "value": False, "previous": True}),
        ("operator:desk-pia", {"setting": "portalEnabled", "value": True, "previous": False}),
    ]
