"""Verifications through the service layer, without the API: VPs of a mandate issued without the
workflow, and their verifications decided but not yet written (``store.verifications.Pending``),
for the tests of ``services.verification`` and of the store's batch that writes them."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import Engine

from core.actors import Actor
from core.secretbox import SecretCipher
from core.settings import Settings
from services import presentations, verification
from store.verifications import Pending
from tests.support.api_client import Credentials
from tests.support.audit import issued_mandate

GOOD = {"amount": 100, "payee": "Bob"}  # execution params the example action's rules allow
KEEP = timedelta(minutes=6)  # how long a used signature is kept (``guards.SignatureUse``)


def new_vps(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, n: int
) -> list[dict[str, Any]]:
    """``n`` VPs of one new mandate of ``org``, each issued to its own API key."""
    agent = Actor.api_key(org.key_id)
    mandate_id = issued_mandate(engine, cipher, settings, org.organization_id).mandate_id
    return [
        presentations.issue_presentation(
            engine, cipher, settings, actor=agent, caller_org_id=org.organization_id, mandate_id=mandate_id
        ).presentation
        for _ in range(n)
    ]


def decided(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, vps: list[dict[str, Any]]
) -> list[Pending]:
    """The verification of each VP by ``org``'s API key with ``GOOD`` params, decided, not written."""
    return [
        verification.decide(
            engine,
            cipher,
            settings,
            actor=Actor.api_key(org.key_id),
            verifier_org_id=org.organization_id,
            presentation=vp,
            execution_params=GOOD,
        )
        for vp in vps
    ]
