"""services.mandates, services.presentations, services.verification: issuance by the workflow's
actor, a VP and a verification by the caller's API key, revocation by whoever revokes; each audit
record names its actor, and the refusals are typed."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from core.actors import TEMPORAL, Actor
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from services import mandates, presentations, verification
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import audit
from tests.conftest import new_org
from tests.support.audit_helpers import chain, issued_mandate
from tests.support.helpers import Credentials, SignedClient, assert_error_shape

pytestmark = pytest.mark.usefixtures("no_server_errors")
GOOD = {"amount": 100, "payee": "Bob"}


@pytest.fixture
def ctx(settings: Settings, engine: Engine, cipher: SecretCipher) -> Context:
    return Context(settings, engine, cipher)


def _actors(engine: Engine, org_id: str, kind: str) -> list[str | None]:
    return [r.actor for r in chain(engine, org_id) if r.type == kind]


def test_issuance_is_recorded_as_the_workflows(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    assert _actors(engine, org.organization_id, audit.MANDATE_ISSUED) == ["temporal"]
    again = mandates.issue(engine, cipher, settings, issued.credential_id, actor=TEMPORAL)
    assert (again.mandate_id, again.newly_issued) == (issued.mandate_id, False)
    assert _actors(engine, org.organization_id, audit.MANDATE_ISSUED) == ["temporal"]


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
        actor=Actor.operator("replayer"),
        verifier_org_id=org.organization_id,
        presentation=vp,
        execution_params=GOOD,
    )
    assert (allowed.decision, replayed.reason) == ("allow", "vp_already_used")
    assert _actors(engine, org.organization_id, audit.VP_ISSUED) == [f"apiKey:{org.key_id}"]
    assert _actors(engine, org.organization_id, audit.VERIFY_ACCEPT) == [f"apiKey:{org.key_id}"]
    assert _actors(engine, org.organization_id, audit.VERIFY_DENY) == ["operator:replayer"]


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
    assert _actors(engine, stranger.organization_id, audit.VP_ISSUE_DENIED) == [f"apiKey:{stranger.key_id}"]
    assert _actors(engine, org.organization_id, audit.VP_ISSUE_DENIED) == []


async def test_revocation_names_its_actor_and_is_refused_twice(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    done = await mandates.revoke(ctx, Actor.operator("dora"), org.organization_id, issued.mandate_id, "lost")
    assert done.credential_id == issued.mandate_id and done.receipt["reason"] == "lost"
    assert _actors(engine, org.organization_id, audit.MANDATE_REVOKED) == ["operator:dora"]
    with pytest.raises(Conflict, match="only an ACTIVE mandate can be revoked"):
        await mandates.revoke(ctx, Actor.operator("dora"), org.organization_id, issued.mandate_id, None)
    record = await mandates.credential_detail(ctx, org.organization_id, issued.mandate_id)
    assert record.credential.status == CredentialStatus.REVOKED
    assert len(_actors(engine, org.organization_id, audit.MANDATE_REVOKED)) == 1


async def test_another_organizations_mandate_is_not_found_and_a_bad_reference_invalid(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    stranger = new_org(engine, cipher, settings)
    with pytest.raises(NotFound):
        await mandates.revoke(
            ctx, Actor.api_key(stranger.key_id), stranger.organization_id, issued.mandate_id, None
        )
    with pytest.raises(NotFound):
        await mandates.credential_detail(ctx, stranger.organization_id, issued.mandate_id)
    with pytest.raises(Invalid, match="mandateId must be a mandate URN"):
        await mandates.revoke(
            ctx, Actor.api_key(org.key_id), org.organization_id, "urn:via:credential:x", None
        )
    assert (
        await mandates.credential_detail(ctx, org.organization_id, issued.mandate_id)
    ).credential.status == (CredentialStatus.ACTIVE)


@pytest.mark.usefixtures("worker")
async def test_revoking_through_the_api_names_the_key(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, api: SignedClient
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    answer = await api.post(f"/credential/{issued.mandate_id}/revoke", {"reason": "done"})
    assert answer.status_code == 200, answer.text
    assert _actors(engine, org.organization_id, audit.MANDATE_REVOKED) == [f"apiKey:{org.key_id}"]
    body = assert_error_shape(await api.post(f"/credential/{issued.mandate_id}/revoke", {"reason": "x"}), 409)
    assert "only an ACTIVE mandate can be revoked" in body["message"]
