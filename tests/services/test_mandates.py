"""services.mandates: issuance by the workflow's actor, revocation by whoever revokes, each audit
record naming its actor, and the refusals typed. What the dashboard reads: the filters of the
credentials' list, a page of them, a credential's view with only its own VPs' verifications, and a
revocation's reason as typed. (VPs: test_presentations.py; verifications: test_verification.py.)"""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from core.actors import TEMPORAL, Actor
from core.ids import urn
from core.kinds import CredentialStatus
from core.secretbox import SecretCipher
from core.settings import Settings
from services import mandates, presentations, verification
from services.context import Context
from services.errors import Conflict, Invalid, NotFound
from store import audit
from store.revocation import CredentialFilter
from tests.conftest import new_org
from tests.support.api_client import Credentials, SignedClient, assert_error_shape
from tests.support.audit import actors, chain, issued_mandate, new_request
from tests.support.verifications import GOOD

pytestmark = pytest.mark.usefixtures("no_server_errors")


def test_issuance_is_recorded_as_the_workflows(
    engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    assert actors(engine, org.organization_id, audit.MANDATE_ISSUED) == ["temporal"]
    again = mandates.issue(engine, cipher, settings, issued.credential_id, actor=TEMPORAL)
    assert (again.mandate_id, again.newly_issued) == (issued.mandate_id, False)
    assert actors(engine, org.organization_id, audit.MANDATE_ISSUED) == ["temporal"]


async def test_revocation_names_its_actor_and_is_refused_twice(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    done = await mandates.revoke(
        ctx, Actor.shell_operator("dora"), org.organization_id, issued.mandate_id, "lost"
    )
    assert done.credential_id == issued.mandate_id and done.receipt["reason"] == "lost"
    assert actors(engine, org.organization_id, audit.MANDATE_REVOKED) == ["operator:dora"]
    with pytest.raises(Conflict, match="only an ACTIVE mandate can be revoked"):
        await mandates.revoke(ctx, Actor.shell_operator("dora"), org.organization_id, issued.mandate_id, None)
    record = await mandates.credential_detail(ctx, org.organization_id, issued.mandate_id)
    assert record.credential.status == CredentialStatus.REVOKED
    assert len(actors(engine, org.organization_id, audit.MANDATE_REVOKED)) == 1


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
    assert actors(engine, org.organization_id, audit.MANDATE_REVOKED) == [f"apiKey:{org.key_id}"]
    body = assert_error_shape(await api.post(f"/credential/{issued.mandate_id}/revoke", {"reason": "x"}), 409)
    assert "only an ACTIVE mandate can be revoked" in body["message"]


def test_the_lists_filters_take_only_what_a_filter_can_hold() -> None:
    request_id = "0123456789abcdef01234567"
    assert mandates.credential_filter(None, None, None) == CredentialFilter(page_size=mandates.PAGE_SIZE)
    assert mandates.credential_filter("", " ", "") == CredentialFilter(page_size=mandates.PAGE_SIZE)
    assert mandates.credential_filter("REVOKED", f" {request_id}\t", "3") == CredentialFilter(
        "REVOKED", request_id, 2, mandates.PAGE_SIZE
    )
    assert mandates.credential_filter(None, None, "100000").page_index == 99_999
    for status, request, page in (
        ("revoked", None, None),
        ("ACTIVE ", None, None),
        (None, request_id.upper(), None),
        (None, request_id[:-1], None),
        (None, None, "0"),
        (None, None, "+1"),
        (None, None, "1.0"),
        (None, None, "\u0663"),  # int() reads an Arabic-Indic digit; a page number is ASCII
        (None, None, "100001"),
    ):
        with pytest.raises(Invalid) as refused:
            mandates.credential_filter(status, request, page)
        assert isinstance(refused.value.message, list) and len(refused.value.message) == 1
    with pytest.raises(Invalid) as every:
        mandates.credential_filter("x", "y", "z")
    assert [m.split(" ", 1)[0] for m in every.value.message] == ["status", "requestId", "page"]


def test_a_revocations_reason_is_one_line_of_at_most_500_characters() -> None:
    assert mandates.revocation_reason("  lost the card ") == "lost the card"
    assert mandates.revocation_reason("é" * 500) == "é" * 500
    assert mandates.revocation_reason("perdu\u00a0: fermé") == "perdu\u00a0: fermé"  # a no-break space
    for bad, why in (
        ("", "Give a reason"),
        (" \t ", "Give a reason"),
        ("x" * 501, "501 characters long"),
        ("a\nb", "one line of printable characters: it holds U\\+000A"),
        ("a\tb\x00", "it holds U\\+0009, U\\+0000"),
        ("a\u202eb", "it holds U\\+202E"),  # a right-to-left override would disguise what follows it
    ):
        with pytest.raises(Invalid, match=why):
            mandates.revocation_reason(bad)


@pytest.mark.parametrize("reason", ["lost\n12:00 REVOKED by root", "lost\u202e", "lost\x85"])
async def test_the_revocation_itself_refuses_a_reason_that_is_not_one_line(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials, reason: str
) -> None:
    """Every surface that revokes (the API, the dashboard, the operators, the command line) comes
    through ``mandates.revoke``: such a reason is never signed into a receipt, whoever sends it."""
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    records = len(chain(engine, org.organization_id))
    with pytest.raises(Invalid, match=r"^reason must be one line without control"):
        await mandates.revoke(
            ctx, Actor.shell_operator("tests"), org.organization_id, issued.mandate_id, reason
        )
    record = await mandates.credential_detail(ctx, org.organization_id, issued.credential_id)
    assert (
        record.credential.status == CredentialStatus.ACTIVE and record.credential.revocation_receipt is None
    )
    assert len(chain(engine, org.organization_id)) == records


async def test_a_page_of_credentials_is_the_organizations_newest_first(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    older = issued_mandate(engine, cipher, settings, org.organization_id)
    newer = new_request(engine, org.organization_id, ("bea@example.com", "carl@example.com"))
    issued_mandate(engine, cipher, settings, new_org(engine, cipher, settings).organization_id)
    listed, total = await mandates.find(ctx, org.organization_id, CredentialFilter())
    assert total == 2 and [c.credential.id for c in listed] == [newer.credentials[0].id, older.credential_id]
    assert [s.contact for s in listed[0].subjects] == ["bea@example.com", "carl@example.com"]
    one, total = await mandates.find(ctx, org.organization_id, CredentialFilter(page_index=1, page_size=1))
    assert total == 2 and [c.credential.id for c in one] == [older.credential_id]
    active, total = await mandates.find(ctx, org.organization_id, CredentialFilter(status="ACTIVE"))
    assert total == 1 and [c.credential.id for c in active] == [older.credential_id]
    of_request = CredentialFilter(request_id=newer.request.id)
    assert [c.credential.id for c in (await mandates.find(ctx, org.organization_id, of_request))[0]] == [
        newer.credentials[0].id
    ]


async def test_a_credentials_view_has_the_verifications_of_its_own_presentations_only(
    ctx: Context, engine: Engine, cipher: SecretCipher, settings: Settings, org: Credentials
) -> None:
    issued = issued_mandate(engine, cipher, settings, org.organization_id)
    stranger = new_org(engine, cipher, settings)
    agent = Actor.api_key(org.key_id)

    def vp() -> dict[str, object]:
        return presentations.issue_presentation(
            engine,
            cipher,
            settings,
            actor=agent,
            caller_org_id=org.organization_id,
            mandate_id=issued.mandate_id,
        ).presentation

    def verified(presentation: dict[str, object], verifier: str) -> verification.Verdict:
        return verification.verify(
            engine,
            cipher,
            settings,
            actor=Actor.shell_operator("tests"),
            verifier_org_id=verifier,
            presentation=presentation,
            execution_params=GOOD,
        )

    allowed = verified(vp(), org.organization_id)
    tried = verified(vp(), stranger.organization_id)  # our VP, shown to a verifier it is not for
    forged = {**vp(), "id": urn("presentation")}  # a VP we never issued, claiming the mandate
    made_up = verified(forged, stranger.organization_id)
    assert (allowed.decision, tried.reason, made_up.reason) == (
        "allow",
        "verifier_not_authorized",
        "vp_signature_invalid",
    )
    assert made_up.credential_id == issued.mandate_id  # it names the mandate all the same

    view = await mandates.credential_view(ctx, org.organization_id, issued.mandate_id)
    assert view.record.credential.id == issued.credential_id
    assert [s.id for s in view.subjects] == [issued.subject_id]
    assert [v.id for v in view.verifications] == [tried.receipt["id"], allowed.receipt["id"]]
    assert view.verification_count == 2 and view.verifications[1].receipt == allowed.receipt
    newest = await mandates.credential_view(ctx, org.organization_id, issued.credential_id, 1)
    assert [v.id for v in newest.verifications] == [tried.receipt["id"]] and newest.verification_count == 2
    with pytest.raises(NotFound):
        await mandates.credential_view(ctx, stranger.organization_id, issued.mandate_id)
    pending = new_request(engine, org.organization_id)
    unsigned = await mandates.credential_view(ctx, org.organization_id, pending.credentials[0].id)
    assert (unsigned.verifications, unsigned.verification_count) == ([], 0)
