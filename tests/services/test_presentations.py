"""services.presentations: a VP, and the verifications of it, by the caller's API key; a VP refused
is recorded as the asker's."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import presentations, verification
from store import audit
from tests.conftest import new_org
from tests.support.api_client import Credentials
from tests.support.audit import actors, issued_mandate
from tests.support.verifications import GOOD

pytestmark = pytest.mark.usefixtures("no_server_errors")


def test_a_vp_and_its_verifications_name_the_callers_key(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    agent = Actor.api_key(org.key_id)
    vp = presentations.issue_presentation(
        engine, cipher, settings, actor=agent, caller_org_id=org.organization_id, mandate_id=issued.mandate_id
    ).presentation
    allowed = verification.verify(
        engine,
        cipher,
        settings,
        actor=agent,
        verifier_org_id=org.organization_id,
        presentation=vp,
        execution_params=GOOD,
    )
    replayed = verification.verify(
        engine,
        cipher,
        settings,
        actor=Actor.shell_operator("replayer"),
        verifier_org_id=org.organization_id,
        presentation=vp,
        execution_params=GOOD,
    )
    assert (allowed.decision, replayed.reason) == ("allow", "vp_already_used")
    assert actors(engine, org.organization_id, audit.VP_ISSUED) == [f"apiKey:{org.key_id}"]
    assert actors(engine, org.organization_id, audit.VERIFY_ACCEPT) == [f"apiKey:{org.key_id}"]
    assert actors(engine, org.organization_id, audit.VERIFY_DENY) == ["operator:replayer"]


def test_a_refused_vp_is_recorded_as_the_askers(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    stranger = new_org(engine, cipher, settings)
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    with pytest.raises(presentations.MandateNotFound):
        presentations.issue_presentation(
            engine,
            cipher,
            settings,
            actor=Actor.api_key(stranger.key_id),
            caller_org_id=stranger.organization_id,
            mandate_id=issued.mandate_id,
        )
    assert actors(engine, stranger.organization_id, audit.VP_ISSUE_DENIED) == [f"apiKey:{stranger.key_id}"]
    assert actors(engine, org.organization_id, audit.VP_ISSUE_DENIED) == []
