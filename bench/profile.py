"""Where the time goes: CPU seconds per process, and (``--profile``) py-spy samples of the API.

py-spy is not a project dependency: ``.venv/bin/pip install py-spy``. The raw (collapsed) stacks
are kept next to the results so they can be loaded into speedscope or a flame-graph tool.

py-spy pauses the API for each sample (its default): sampled with ``--nonblocking`` instead, the
stacks it read while the process ran on were torn, and two profiles of the same verify path on
2026-11-25 put 11% and 14% of the samples as "leaf" time in functions that do next to nothing
(SQLAlchemy's ``_Dispatch.__init__``, FastAPI's ``request_params_to_args``), hiding that the
rules took a quarter of the API's time. The pauses slow the profiled round, which is not counted.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import sys
from collections import Counter
from pathlib import Path

FRAME_RE = re.compile(r"^(?P<func>.+?) \((?P<file>[^:()]+)(?::\d+)?\)$")
PROJECT_DIRS = (
    "api/", "store/", "core/", "workflows/", "activities/", "services/", "orchestration/", "wire/", "trust/",
)  # fmt: skip
ROOT = str(Path(__file__).resolve().parents[1]) + "/"  # the checkout (a worktree's too)


def _descendants(pid: int) -> list[int]:
    found: list[int] = []
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in children.read_text().split():
                found += [int(child), *_descendants(int(child))]
    return found


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process and its live descendants (Linux /proc; 0 elsewhere)."""
    total = 0.0
    for p in [pid, *_descendants(pid)]:
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{p}/stat").read_text().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def own_cpu_seconds() -> float:
    times = os.times()
    return times.user + times.system


def py_spy() -> str | None:
    local = Path(sys.executable).parent / "py-spy"
    return str(local) if local.exists() else shutil.which("py-spy")


class Profiler:
    def __init__(self, pid: int, output: Path) -> None:
        self.pid, self.output = pid, output
        self.proc: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Profiler:
        exe = py_spy()
        if exe is None:
            raise RuntimeError("--profile needs py-spy: .venv/bin/pip install py-spy")
        self.proc = await asyncio.create_subprocess_exec(
            exe,
            "record",
            "--pid",
            str(self.pid),
            "--subprocesses",
            "--rate",
            "250",
            "--format",
            "raw",
            "--output",
            str(self.output),
            "--gil",
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )
        await asyncio.sleep(1.0)  # attach before the phase starts
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGINT)  # py-spy writes its output on Ctrl-C
        stderr = (await self.proc.communicate())[1]
        if not self.output.exists():
            print(f"  py-spy wrote nothing: {stderr.decode(errors='replace')[-500:]}")


def _parse(frame: str) -> tuple[str, str]:
    found = FRAME_RE.match(frame.strip())
    if not found:
        return frame.strip(), ""
    return found["func"], found["file"]


def _short(file: str) -> str:
    for marker in ("site-packages/", ROOT, "lib/python3"):
        if marker in file:
            return file.split(marker, 1)[1]
    return file


def summarize(raw: Path, top: int = 15, process: str = "API") -> str:
    """Where the samples went: leaf functions, and project functions including callees."""
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in raw.read_text(errors="replace").splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        frames = [_parse(f) for f in stack.split(";")]
        func, file = frames[-1]
        leaf[f"{func} ({_short(file)})"] += count
        seen = set()
        for func, file in frames:
            name = f"{func} ({_short(file)})"
            if _short(file).startswith(PROJECT_DIRS) and name not in seen:
                seen.add(name)
                inclusive[name] += count
    if not total:
        return "  (no samples)"
    lines = [
        f"  {total} samples of the {process} process (all threads, idle excluded)",
        "  project functions, including what they call:",
    ]
    lines += [f"    {100 * n / total:5.1f}%  {name}" for name, n in inclusive.most_common(top)]
    lines.append("  leaf functions (where the CPU was):")
    lines += [f"    {100 * n / total:5.1f}%  {name}" for name, n in leaf.most_common(top)]
    return "\n".join(lines)
