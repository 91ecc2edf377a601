"""Instructions per part of a verification, counted by valgrind's callgrind: the same count for the
same code and inputs however loaded the machine is, where the wall-clock benchmarks on a shared
2-core machine move by a third between runs.

``python -m bench.instructions [--iterations N]`` runs each part below in a child process under
``valgrind --tool=callgrind``, once with no iteration and once with N (200 unless given), and
prints (count with N - count without) / N, the part's own instructions (each child runs the part once
before, outside the difference, with one hash seed). Before and after a change,
run it from each tree (``PYTHONPATH=<worktree> python <worktree or checkout>/bench/instructions.py``:
it runs as a file too, with everything else imported from ``PYTHONPATH``).

The parts (a verification of the example action's mandate, as ``bench.trust`` builds its VC and VP):

- ``rules``: the example action's two rules on passing values (``policy.jobs.RulesJob.run``);
- ``jcs``: the JCS of the VP and of an audit record's data holding it (``trust.jcs.canonicalize``);
- ``depth``: the depth check of the verification's body (``wire.json_depth``);
- ``audit_row``: the audit record's data made canonical and bound for its insert (``store.audit``).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

PARTS = ("rules", "jcs", "depth", "audit_row")
COLLECTED = re.compile(r"Collected : (\d+)")


def _presentation() -> dict[str, Any]:
    from bench.trust import ORG, SERVICE, keyed, make_presentation, sign_mandate
    from trust.credentials import action_pin, digest_sri

    user_params = {"maxAmount": 1000, "payees": ["acme", "other"]}
    pin = action_pin("urn:via:action:6f1c", "urn:via:action-version:9e2d", digest_sri({}), user_params)
    return make_presentation(sign_mandate(keyed(SERVICE), pin), keyed(ORG))


def part(name: str) -> Callable[[], Any]:
    """The function one iteration of part ``name`` runs (set up here, outside the count)."""
    vp = _presentation()
    execution = {"amount": 120, "payee": "acme"}
    data: dict[str, Any] = {
        "presentation": vp,
        "executionParams": execution,
        "evaluations": [],
        "reason": None,
    }
    if name == "rules":
        from cli.devstack import EXAMPLE_ACTION
        from policy import cost
        from policy.jobs import RulesJob
        from policy.params import parse_params
        from policy.rules import parse_rules

        job = RulesJob(
            "v1",
            parse_rules(EXAMPLE_ACTION["rules"])[0],
            parse_params(EXAMPLE_ACTION["executionParams"], where="e", allow_defaults=False)[0],
            parse_params(EXAMPLE_ACTION["userParams"], where="u", allow_defaults=True)[0],
            execution,
            {"maxAmount": 1000, "payees": ["acme", "other"]},
            datetime.now(UTC),
            cost.RULE_BUDGET,
        )
        return job.run
    if name == "jcs":
        from trust.jcs import canonicalize

        return lambda: (canonicalize(vp), canonicalize(data))
    if name == "depth":
        from wire.json_depth import json_depth_exceeds

        body = json.dumps({"presentation": vp, "executionParams": execution}).encode()
        return lambda: json_depth_exceeds(body)
    if name == "audit_row":
        from sqlalchemy import create_engine

        from store import audit, prepared
        from trust.jcs import canonicalize

        compiled = prepared._Compiled(
            audit._INSERT.statement, create_engine("sqlite://").dialect, audit._INSERT.column_keys
        )
        row: dict[str, Any] = dict.fromkeys(audit._INSERT.column_keys or [])
        row.update(created_at=datetime.now(UTC), seq=1, proof={})
        encoded: Any = getattr(prepared, "Encoded", None)  # not in trees before it

        def bind() -> Any:
            member = canonicalize(data)  # the draft's, in both
            return compiled.arguments({**row, "data": encoded(member.decode()) if encoded else data})

        return bind
    raise ValueError(f"unknown part {name!r}: one of {', '.join(PARTS)}")


def _collected(name: str, iterations: int) -> int:
    command = [
        "valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
        sys.executable, str(Path(__file__).resolve()), "--run", name, str(iterations),
    ]  # fmt: skip
    # one hash seed: the dicts and sets of both runs are laid out alike
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    found = COLLECTED.search(done.stderr)
    if found is None:
        raise RuntimeError(f"callgrind printed no count: {done.stderr[-500:]}")
    return int(found.group(1))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--iterations", type=int, default=200)
    parser.add_argument("--run", nargs=2, metavar=("PART", "N"), help=argparse.SUPPRESS)  # the child
    args = parser.parse_args(argv)
    if args.run:
        run = part(args.run[0])
        run()  # once outside the count too: first calls compile rules, fill caches
        for _ in range(int(args.run[1])):
            run()
        return
    if args.iterations < 1:
        parser.error("--iterations must be at least 1")
    if shutil.which("valgrind") is None:
        raise SystemExit("bench.instructions needs valgrind (Debian's valgrind package)")
    for name in PARTS:
        own = (_collected(name, args.iterations) - _collected(name, 0)) / args.iterations
        print(f"  {name:<10} {own / 1e6:8.3f} M instructions per iteration")


if __name__ == "__main__":
    if __package__ in (None, ""):  # bench/ is first on the path: file_mode sets the rest up
        from file_mode import run_as_file

        run_as_file(__file__)
    main()
