"""Tests of one module of the activities package on its own. The activities are mostly tested through
the workflows that run them (tests/workflows) and under cancels and crashes (tests/durability)."""
