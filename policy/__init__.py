"""Actions, param types and CEL rules: parse, check at publish time, evaluate at verify time.

Pure: imports nothing of the project. See CONTRACT sections 5 and 6.
"""

from policy.actions import ActionSpec, canonical_content, check_spec, parse_action_spec
from policy.params import NAME_RE, PARAM_TYPES, Param, check_value, parse_params, validate_values
from policy.rules import Evaluation, Rule, check_rules, compile_count, evaluate, parse_rules

__all__ = [
    "NAME_RE",
    "PARAM_TYPES",
    "ActionSpec",
    "Evaluation",
    "Param",
    "Rule",
    "canonical_content",
    "check_rules",
    "check_spec",
    "check_value",
    "compile_count",
    "evaluate",
    "parse_action_spec",
    "parse_params",
    "parse_rules",
    "validate_values",
]
