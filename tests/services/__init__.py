"""Tests of the service layer: each operation by an actor, and the audit records naming it."""
