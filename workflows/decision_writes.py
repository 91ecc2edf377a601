"""Writing a subject's decision from the request workflow: its record, its credential's issuance
when every subject accepted it, and its ``credential`` event, as the revision the request started
on does them (``workflows.patches``). Deterministic code only: it runs in the request workflow.

- Revision 0 and 1: the record is an activity; the issuance and the event follow (local activities
  from the ``decision-writes-local`` patch, ADR 14).
- Revision 2: the record is a local activity in the update's task, answered with the decision as
  stored (ADR 24); the issuance and the event follow as local activities.
- Revision 3: the three in one local activity (ADR 27), unless another subject's decision on the
  same credential is still being written or its issuance is under way: then as on revision 2, so
  the issuance waits for every acceptance it reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from temporalio import workflow

from workflows.issuance import Issuance
from workflows.journey import SubjectJourney
from workflows.patches import (
    ISSUANCE_PATCH,
    LOCAL_DECISION_PATCH,
    LOCAL_RECORD_REVISION,
    ONE_WRITE_REVISION,
    WEBHOOK_PATCH,
    has,
)
from workflows.request_events import RequestEvents

with workflow.unsafe.imports_passed_through():
    from workflows.ids import ActivityNames
    from workflows.messages import (
        CredentialRequestInput,
        DecisionInput,
        DecisionView,
        DecisionWritten,
        RecordDecisionInput,
        RecordedDecision,
        WriteDecisionInput,
    )
    from workflows.options import write, write_for


@dataclass(frozen=True)
class Written:
    """The decision as the workflow answers it: the stored one's id and time, the mandate issued."""

    decision_id: str
    decided_at: datetime
    mandate_id: str | None


class DecisionWrites:
    """The writes of one request's decisions. ``decisions`` is the workflow's own, every decision
    made; ``_recorded`` holds those whose record has landed."""

    def __init__(
        self,
        inp: CredentialRequestInput,
        decisions: dict[tuple[str, str], DecisionView],
        events: RequestEvents,
        journey: SubjectJourney,
    ) -> None:
        self._input = inp
        self._decisions = decisions
        self._recorded: set[tuple[str, str]] = set()
        self._issuance = Issuance(inp, self._recorded)
        self._events, self._journey = events, journey

    async def write(self, inp: DecisionInput, record: RecordDecisionInput) -> Written:
        revision = self._input.revision
        if revision >= ONE_WRITE_REVISION:
            issues = self._one_write_issues(inp)
            if issues is not None:
                return await self._in_one_write(inp, record, issues)
        if revision >= LOCAL_RECORD_REVISION:
            inp, decision_id, at = await self._record_locally(inp, record)
        else:
            await write(ActivityNames.RECORD_DECISION, record)
            decision_id, at = record.decision_id, record.decided_at
            self._recorded.add((inp.subject_id, inp.credential_id))
        # from here on the decision's id and time are in the history (the record's input), so what
        # follows runs as local activities (histories recorded before replay them as activities)
        local = has(revision, LOCAL_DECISION_PATCH)
        mandate_id = None
        # histories recorded before issuance existed replay without the activity
        if inp.accept and self._accepted_by_all(inp.credential_id) and has(revision, ISSUANCE_PATCH):
            mandate_id = await self._issuance.issue_once(inp.credential_id, local)
        # after issuance, so an acceptance's event carries the mandate; histories recorded before
        # webhooks existed replay without it
        if has(revision, WEBHOOK_PATCH):
            # a subject's identity event is delivered before their credential events (CONTRACT 7)
            after = self._journey.identity_events(inp.subject_id)
            await self._events.emit_credential(inp, decision_id, at, local, after)
        return Written(decision_id, at, mandate_id)

    def _accepted_by_all(self, credential_id: str) -> bool:
        """Every subject of the request accepted ``credential_id`` (CONTRACT 9: it becomes ACTIVE)."""
        return all(
            (found := self._decisions.get((subject, credential_id))) is not None and found.accepted
            for subject in self._input.subject_ids
        )

    def _one_write_issues(self, inp: DecisionInput) -> bool | None:
        """Whether the one write issues the credential if the stored decision is an acceptance
        (every other subject's acceptance of it is written); None when it cannot be one write:
        another subject's decision on the credential is still being written, or its issuance is
        under way."""
        others = [(s, inp.credential_id) for s in self._input.subject_ids if s != inp.subject_id]
        if self._issuance.under_way(inp.credential_id):
            return None
        if any(key in self._decisions and key not in self._recorded for key in others):
            return None
        return all(key in self._recorded and self._decisions[key].accepted for key in others)

    async def _in_one_write(self, inp: DecisionInput, record: RecordDecisionInput, issues: bool) -> Written:
        """Revision 3: one local activity in the update's task; the workflow takes the decision as
        stored, as on revision 2."""
        credential_id = inp.credential_id
        if issues:
            self._issuance.begin(credential_id)
        try:
            written = await write_for(
                ActivityNames.WRITE_DECISION,
                WriteDecisionInput(
                    record=record, organization_id=self._input.organization_id, issue_if_accepted=issues
                ),
                DecisionWritten,
                summary=f"decision of {inp.subject_id} on {credential_id}",
                local=True,
            )
        except BaseException:
            if issues:
                self._issuance.settle(credential_id, None)
            raise
        if issues:
            self._issuance.settle(credential_id, written.mandate_id)
        self._took(inp, written.decision)
        after = self._journey.identity_events(inp.subject_id)
        self._events.send_in_background(written.events.by_endpoint(), "credential", after)
        return Written(written.decision.decision_id, written.decision.decided_at, written.mandate_id)

    async def _record_locally(
        self, inp: DecisionInput, record: RecordDecisionInput
    ) -> tuple[DecisionInput, str, datetime]:
        """Revision 2: the record as a local activity in the update's task, which answers with the
        subject's decision as stored; the workflow takes that one (its id, time and choice). A task
        run again (a worker died mid-task) stores nothing new: its clock may differ from the first
        run's, and a decision stored by an update that Temporal lost is the one that counts."""
        stored = await write_for(
            ActivityNames.RECORD_DECISION,
            record,
            RecordedDecision,
            summary=f"decision of {inp.subject_id} on {inp.credential_id}",
            local=True,
        )
        self._took(inp, stored)
        return inp.model_copy(update={"accept": stored.accepted}), stored.decision_id, stored.decided_at

    def _took(self, inp: DecisionInput, stored: RecordedDecision) -> None:
        """The decision as stored is the workflow's (its id, time and choice), and it has landed."""
        key = (inp.subject_id, inp.credential_id)
        self._decisions[key] = self._decisions[key].model_copy(update=stored.model_dump())  # same fields
        self._recorded.add(key)
