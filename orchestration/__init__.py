"""Orchestration: Temporal alone. The client, workflow starts and updates, the reconciler, the
identity hand-off to the workflow and reading histories. Above `store`, below `services`; the
adapters to the outside world are in `adapters` (ADR 0017)."""
