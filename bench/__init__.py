"""Benchmarks that start their own stack: ``python -m bench.intake`` (``make bench``)."""
