"""Orchestration: the Temporal client, workflow starts and updates, the reconciler, identity hand-off
and message delivery. Above `store`, below `services`."""
