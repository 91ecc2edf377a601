"""The instruction-count benchmark's own parts (``bench.instructions``): each part does the work it
names on a real VP, and the count is the difference callgrind prints, per iteration."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from bench import instructions
from policy.rules import RulesRun


def test_each_part_does_its_work() -> None:
    rules = instructions.part("rules")()
    assert isinstance(rules, RulesRun)
    assert [e.result for e in rules.evaluations] == ["pass", "pass"]
    vp, data = instructions.part("jcs")()
    assert json.loads(vp)["type"] == ["VerifiablePresentation"]
    assert json.loads(data)["presentation"] == json.loads(vp)
    assert instructions.part("depth")() is False
    bound = instructions.part("audit_row")()
    stored = [value for value in bound if isinstance(value, str) and value.startswith('{"evaluations"')]
    assert stored and json.loads(stored[0])["executionParams"] == {"amount": 120, "payee": "acme"}
    with pytest.raises(ValueError, match="unknown part"):
        instructions.part("nothing")


def test_the_count_is_the_difference_per_iteration(monkeypatch: pytest.MonkeyPatch, capsys: Any) -> None:
    counts = {0: 1_000_000, 200: 1_000_000 + 200 * 1_500}
    seen: list[list[str]] = []

    def run(command: list[str], **_: Any) -> subprocess.CompletedProcess[str]:
        seen.append(command)
        collected = counts[int(command[-1])]
        return subprocess.CompletedProcess(command, 0, "", f"==1== Collected : {collected}\n")

    monkeypatch.setattr(instructions.subprocess, "run", run)
    monkeypatch.setattr(instructions.shutil, "which", lambda _: "/usr/bin/valgrind")
    instructions.main([])
    out = capsys.readouterr().out
    assert out.count("0.002 M instructions per iteration") == len(instructions.PARTS)
    assert len(seen) == 2 * len(instructions.PARTS)
    assert seen[0][:2] == ["valgrind", "--tool=callgrind"] and Path(seen[0][4]).name == "instructions.py"
