"""Issuing a request's credentials from its workflow: once every subject accepted a credential
(CONTRACT 9: it becomes ACTIVE), its mandate is issued once, whoever's acceptance completed it.
Deterministic code only: it runs in the request workflow (``workflows.credential_request``).
"""

from __future__ import annotations

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

from workflows.patches import ISSUANCE_FAILURE_PATCH, has

with workflow.unsafe.imports_passed_through():
    from workflows.ids import ActivityNames
    from workflows.messages import (
        ISSUANCE_FAILED,
        CredentialRequestInput,
        IssueCredentialInput,
        IssueCredentialResult,
    )
    from workflows.options import write_for


class Issuance:
    """The issuances of one request. ``recorded`` is the workflow's set of decisions (subject,
    credential) whose write has landed, which an issuance waits for."""

    def __init__(self, inp: CredentialRequestInput, recorded: set[tuple[str, str]]) -> None:
        self._input = inp
        self._recorded = recorded
        # credential id -> its mandate id once issued (None: issuance failed), so acceptors
        # deciding at once all answer with the one issuance
        self._issuing: set[str] = set()
        self._issued: dict[str, str | None] = {}

    def under_way(self, credential_id: str) -> bool:
        """The credential's issuance has begun (it may be done)."""
        return credential_id in self._issuing

    def begin(self, credential_id: str) -> None:
        """An issuance made elsewhere (revision 3's one write) has begun: an acceptor arriving
        meanwhile waits for ``settle``."""
        self._issuing.add(credential_id)

    def settle(self, credential_id: str, mandate_id: str | None) -> None:
        self._issued[credential_id] = mandate_id

    async def issue_once(self, credential_id: str, local: bool) -> str | None:
        """Issue a credential every subject accepted, once. The issuance activity reads the
        decisions from the database, so it waits until the other acceptances of the credential,
        made in concurrent updates, are written too; an acceptor arriving while it runs shares its
        result."""
        if credential_id in self._issuing:
            await workflow.wait_condition(lambda: credential_id in self._issued)
            return self._issued[credential_id]
        self._issuing.add(credential_id)
        keys = [(subject, credential_id) for subject in self._input.subject_ids]
        await workflow.wait_condition(lambda: all(k in self._recorded for k in keys))
        try:
            issued = await write_for(
                ActivityNames.ISSUE_CREDENTIAL,
                IssueCredentialInput(request_id=self._input.request_id, credential_id=credential_id),
                IssueCredentialResult,
                summary=f"issue {credential_id}",
                local=local,
            )
        except ActivityError as err:
            self._issued[credential_id] = None
            if (
                isinstance(err.cause, ApplicationError)
                and err.cause.type == ISSUANCE_FAILED
                and has(self._input.revision, ISSUANCE_FAILURE_PATCH)
            ):
                # the credential is FAILED (with its audit record); the decision stands, and its
                # ``credential`` event tells the integrator (the credential's status is FAILED)
                return None
            raise
        except BaseException:
            self._issued[credential_id] = None
            raise
        self._issued[credential_id] = issued.mandate_id
        return issued.mandate_id
