"""Named crash points for the durability tests.

``MANDATUM_CRASH_AT=<name>`` makes the process exit abruptly (no clean-up, like a kill -9) when it
reaches that point. Refused outside development and test, so production can never crash on it.
"""

from __future__ import annotations

import os


def crash_point(name: str) -> None:
    if os.environ.get("MANDATUM_CRASH_AT") != name:
        return
    if os.environ.get("MANDATUM_ENVIRONMENT", "development") == "production":
        return
    os._exit(137)
