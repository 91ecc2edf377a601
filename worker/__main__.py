"""``python -m worker``: the worker process (see ``worker``)."""

from worker import run

run()
