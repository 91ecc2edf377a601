"""The issuance activity: a credential every subject accepted becomes a signed credential."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.definition import defn
from core.actors import TEMPORAL
from core.faults import crash_point
from core.observe import events
from core.secretbox import SecretCipher
from core.settings import Settings
from services import mandates
from store import retries
from store.db import read_session
from store.tables import CredentialRequest
from workflows.ids import ActivityNames
from workflows.messages import ISSUANCE_FAILED, IssueCredentialInput, IssueCredentialResult
from workflows.retry_messages import ReopenCredentialInput, ReopenCredentialResult


class MandateActivities:
    def __init__(self, engine: Engine, cipher: SecretCipher, settings: Settings) -> None:
        self._engine, self._cipher, self._settings = engine, cipher, settings

    @defn(name=ActivityNames.ISSUE_CREDENTIAL)
    def issue_credential(self, inp: IssueCredentialInput) -> IssueCredentialResult:
        """Idempotent (services.mandates.issue): a retry returns the credential issued before."""
        crash_point("issue:before")
        try:
            issued = mandates.issue(
                self._engine, self._cipher, self._settings, inp.credential_id, actor=TEMPORAL
            )
        except mandates.NotIssuable as exc:  # the state says no: retrying cannot change that
            raise ApplicationError(str(exc), type="not_issuable", non_retryable=True) from exc
        except mandates.IssuanceFailed as exc:  # nor can it change the stored content
            mandates.record_issuance_failure(self._engine, TEMPORAL, inp.credential_id, exc.reason)
            raise ApplicationError(
                f"credential {inp.credential_id} cannot be issued: {exc.reason}",
                type=ISSUANCE_FAILED,
                non_retryable=True,
            ) from exc
        crash_point("issue:after-commit")
        if issued.newly_issued:  # a retry of an issuance that committed says nothing again
            self._issued(inp, issued.mandate_id)
        return IssueCredentialResult(
            credential_id=issued.credential_id, mandate_id=issued.mandate_id, newly_issued=issued.newly_issued
        )

    @defn(name=ActivityNames.REOPEN_CREDENTIAL)
    def reopen_credential(self, inp: ReopenCredentialInput) -> ReopenCredentialResult:
        """Support's retry (issue 32): the FAILED credential becomes PENDING with its audit record,
        once (a retry of this activity finds it PENDING and writes nothing); with the acceptance
        its issuance follows."""
        crash_point("retry:reopen")
        reopened = retries.reopen_failed(self._engine, inp.credential_id, inp.actor, inp.reason)
        last = retries.last_acceptance(self._engine, inp.credential_id)
        if last is None:  # no acceptance: nothing was ever issuable
            raise ApplicationError(
                f"credential {inp.credential_id} has no acceptance", type="not_issuable", non_retryable=True
            )
        return ReopenCredentialResult(
            reopened=reopened,
            decision_id=last.decision_id,
            subject_id=last.subject_id,
            decided_at=last.decided_at,
        )

    def _issued(self, inp: IssueCredentialInput, mandate_id: str) -> None:
        with read_session(self._engine) as session:
            request = session.get(CredentialRequest, inp.request_id)
        events.mandate_issued(
            organization_id=request.organization_id if request is not None else "",
            request_id=inp.request_id,
            workflow_id=activity.info().workflow_id,
            credential_id=inp.credential_id,
            mandate_id=mandate_id,
        )

    def all(self) -> list[Callable[..., Any]]:
        return [self.issue_credential, self.reopen_credential]
