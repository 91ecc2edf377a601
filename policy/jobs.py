"""A verification's rules as one self-contained job (issue 30): what an evaluation process receives
and answers, one line of JSON each way (``policy.process``, ``services.rule_pool``).

A job carries everything its evaluation needs (the rules, the declared params, the values, ``now``,
the step budget and the mandate's use of its limits), so a process keeps no state but its compiled
programs, and the same job gives the same answer in the API's own thread and in any process.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from policy import cost
from policy.params import Param, parse_params, parse_timestamp
from policy.rules import Evaluation, Rule, RulesRun, parse_rules, program_tree, run_rules

_DECLARED_MAX = 4096
_declared: dict[tuple[object, ...], int] = {}


@dataclass(frozen=True)
class RulesJob:
    version_key: str
    rules: list[Rule]
    execution_types: list[Param]
    user_types: list[Param]
    execution: dict[str, Any]
    user: dict[str, Any]
    now: datetime
    budget: int
    # what rules read as usage.<limit>.used and .remaining (policy.limits.usage_fields); last, with
    # a default, so a job made without it (no limits) is made as before
    usage: dict[str, dict[str, Any]] = field(default_factory=dict)

    def run(self) -> RulesRun:
        return run_rules(
            self.version_key,
            self.rules,
            self.execution,
            self.user,
            self.now,
            execution_types=self.execution_types,
            user_types=self.user_types,
            budget=self.budget,
            usage=self.usage,
        )

    def runs_inline(self) -> bool:
        """Whether the rules may run on the caller's own thread: they take at most
        ``policy.cost.INLINE_STEPS`` steps at the params' declared bounds, or on these values."""
        return (
            self.steps_at_most(declared=True) <= cost.INLINE_STEPS
            or self.steps_at_most() <= cost.INLINE_STEPS
        )

    def steps_at_most(self, *, declared: bool = False) -> int:
        """The rules' estimated steps (``policy.cost``) at the declared bounds (remembered per
        version, rules, params and limits read: a draft tried again may have changed any of them)
        or on this job's values. A job's limits are those of its ``usage``."""
        bounds = tuple(
            (p.name, p.type, p.length_limit, p.items_limit) for p in self.execution_types + self.user_types
        )
        limits = tuple(sorted(self.usage))
        key = (self.version_key, bounds, limits, *(r.expression for r in self.rules))
        if declared and key in _declared:
            return _declared[key]
        roots = (
            cost.declared_roots(self.execution_types, self.user_types, limits)
            if declared
            else cost.value_roots(self.execution, self.user, self.usage)
        )
        steps = 0
        for rule in self.rules:
            tree = program_tree(self.version_key, rule)
            steps += cost.estimate(tree, roots, runnable=True) if tree is not None else 1
        if declared:
            if len(_declared) >= _DECLARED_MAX:
                _declared.clear()
            _declared[key] = steps
        return steps

    def encode(self) -> bytes:
        return _line(
            {
                "key": self.version_key,
                "rules": [r.as_json() for r in self.rules],
                "executionTypes": [p.as_json() for p in self.execution_types],
                "userTypes": [p.as_json() for p in self.user_types],
                "execution": self.execution,
                "user": self.user,
                "now": self.now.isoformat(),
                "budget": self.budget,
                "usage": self.usage,
            }
        )


def decode_job(line: bytes) -> RulesJob:
    """The job of one line; ``ValueError`` for a line that is not one."""
    raw = json.loads(line)
    rules, rule_errors = parse_rules(raw["rules"])
    execution_types, execution_errors = parse_params(
        raw["executionTypes"], where="executionParams", allow_defaults=False
    )
    user_types, user_errors = parse_params(raw["userTypes"], where="userParams", allow_defaults=True)
    now = parse_timestamp(raw["now"])
    usage = raw.get("usage", {})
    if not isinstance(usage, dict) or not all(isinstance(fields, dict) for fields in usage.values()):
        raise ValueError("not a rules job")
    if rule_errors or execution_errors or user_errors or now is None:
        raise ValueError("not a rules job")
    return RulesJob(
        str(raw["key"]),
        rules,
        execution_types,
        user_types,
        dict(raw["execution"]),
        dict(raw["user"]),
        now,
        int(raw["budget"]),
        {str(name): dict(fields) for name, fields in usage.items()},
    )


def encode_run(run: RulesRun) -> bytes:
    return _line(
        {
            "evaluations": [e.as_json() for e in run.evaluations],
            "steps": run.steps,
            "limitReached": run.limit_reached,
        }
    )


def encode_refusal(reason: str) -> bytes:
    return _line({"refused": reason})


def decode_run(line: bytes) -> RulesRun:
    """The run of one answer line; ``ValueError`` for a refusal or a line that is not a run."""
    raw = json.loads(line)
    if "refused" in raw:
        raise ValueError(f"the evaluation process refused the job: {raw['refused']}")
    evaluations = [
        Evaluation(rule=e["rule"], expression=e["expression"], result=e["result"], reason=e.get("reason"))
        for e in raw["evaluations"]
    ]
    return RulesRun(evaluations, int(raw["steps"]), bool(raw["limitReached"]))


def _line(value: dict[str, Any]) -> bytes:
    # JSON escapes every newline inside strings: one value is exactly one line
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"
