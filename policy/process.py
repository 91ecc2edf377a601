"""The evaluation process (``python -m policy.process``): reads rules jobs from stdin, one JSON
line each, and answers each with its run on stdout (``policy.jobs``). It runs at a lower CPU
priority than the API (nice 5), so rules that use their whole budget slow down other rules, not
the API's answers; it ends when its stdin closes (the API that started it is gone).
"""

from __future__ import annotations

import os
import sys
from typing import BinaryIO

from policy.jobs import decode_job, encode_refusal, encode_run

NICENESS = 5


READY = b"ready\n"  # the first line: imports done, jobs may come


def serve(source: BinaryIO, sink: BinaryIO) -> None:
    sink.write(READY)
    sink.flush()
    for line in source:
        try:
            job = decode_job(line)
        except (ValueError, KeyError, TypeError) as exc:  # never from the API: a line it did not write
            sink.write(encode_refusal(f"not a rules job ({type(exc).__name__})"))
        else:
            sink.write(encode_run(job.run()))
        sink.flush()


if __name__ == "__main__":
    try:
        os.nice(NICENESS)
    except OSError:  # not permitted here: run at the API's priority
        pass
    serve(sys.stdin.buffer, sys.stdout.buffer)
