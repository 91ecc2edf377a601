"""Ending a process whose work is done without the interpreter's finalization.

The Temporal client's native threads can abort finalization now and then (``PyGILState_Release``
... ``finalizing``, exit -6) after everything has finished cleanly; leaving at once, output and
log handlers flushed, keeps the exit status true. The ``mandatum`` command and the worker end so.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import NoReturn


def exit_now(code: int = 0) -> NoReturn:
    logging.shutdown()  # every handler flushed and closed
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)
