"""Publish-time checks of one CEL rule (CONTRACT section 6): compiles, refers only to declared fields,
yields a boolean.

cel-python parses and evaluates CEL but has no static type checker, so "yields a boolean" is decided
in two layers:

1. Static inference over the parse tree. Operators, literals, declared fields, `now`, macros and the
   standard functions have known result kinds; a rule whose result kind is known and is not bool
   (`userParams.max + 1`), or may be something else (`c ? true : 1`), is refused.
2. Evaluation with several sets of representative values of the declared types (empty and non-empty
   arrays, zero, negative and large numbers, both booleans, timestamps before and after `now`). A
   rule is refused when any run yields a non-boolean or fails with a type error (no matching
   overload, field of a scalar): those are what CEL's own checker would report. Errors that depend on
   the values (division by zero, an index out of range, a failed conversion) are left to run time,
   where they give result "error".

A rule also reads a mandate's use of each limit its action declares (issue 31): `usage.<limit>.used`
and `usage.<limit>.remaining`, numbers (CEL doubles) before this verification. Only those two paths
are fields: `usage` or `usage.<limit>` on its own, an undeclared limit and any other field of one are
refused like an undeclared param. A request's own `maxExecutions` bound is not a limit of the action
(some requests have none), so rules cannot read it.

Limits: the inference treats indexing (`list[0]`), macro variables and `dyn()` as unknown, and the
evaluation sees only the sample values, so a non-boolean or type error reachable only for other
values (a ternary over a specific string, say) is found at verify time instead, where it gives
result "error" and the verification is denied. Nothing unsafe passes: a rule never allows by error.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import lark
from celpy import celtypes

from policy import cel
from policy.cel import USAGE, USAGE_FIELDS
from policy.params import Param

PARAM_ROOTS = ("executionParams", "userParams")
MACROS = {"all", "exists", "exists_one", "map", "filter"}
GLOBAL_FUNCTIONS = {
    "has": "bool",
    "bool": "bool",
    "matches": "bool",
    "int": "int",
    "uint": "uint",
    "double": "double",
    "string": "string",
    "bytes": "bytes",
    "timestamp": "timestamp",
    "duration": "duration",
    "size": "int",
    "type": "type",
    "dyn": None,
}
METHODS = {
    "all": "bool",
    "exists": "bool",
    "exists_one": "bool",
    "contains": "bool",
    "startsWith": "bool",
    "endsWith": "bool",
    "matches": "bool",
    "map": "list",
    "filter": "list",
    "size": "int",
    **{
        name: "int"
        for name in (
            "getDate getDayOfMonth getDayOfWeek getDayOfYear getFullYear getMonth "
            "getHours getMilliseconds getMinutes getSeconds"
        ).split()
    },
}
CEL_KIND = {
    "string": "string",
    "number": "double",
    "integer": "int",
    "boolean": "bool",
    "timestamp": "timestamp",
    "array<string>": "list",
    "array<number>": "list",
}
LITERAL_KIND = {
    "BOOL_LIT": "bool",
    "INT_LIT": "int",
    "UINT_LIT": "uint",
    "FLOAT_LIT": "double",
    "STRING_LIT": "string",
    "MLSTRING_LIT": "string",
    "BYTES_LIT": "bytes",
    "NULL_LIT": "null",
}
NON_BOOLEAN = "a non-boolean value"

Kinds = frozenset[str] | None  # None: not known statically
# The declared names by root: each param of executionParams and userParams, and under "usage" each
# limit the action declares, as a number (the type of its fields, used and remaining).
Declared = dict[str, dict[str, Param]]


def declare(execution: list[Param], user: list[Param], limits: Sequence[str] = ()) -> Declared:
    return {
        "executionParams": {p.name: p for p in execution},
        "userParams": {p.name: p for p in user},
        USAGE: {name: Param(name, "number") for name in limits},
    }


def _children(node: lark.Tree) -> list[Any]:
    return [c for c in node.children if c is not None]


def _root_ident(node: Any) -> str | None:
    """The name when `node` is a bare identifier (member -> primary -> ident), else None."""
    node = _bare(node)
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None


def _usage_limit(node: Any) -> str | None:
    """The limit's name when `node` is `usage.<limit>`, else None."""
    node = _bare(node)
    if isinstance(node, lark.Tree) and node.data == "member_dot":
        target, field = _children(node)
        if _root_ident(target) == USAGE:
            return str(field)
    return None


def _bare(node: Any) -> Any:
    """`node` without the levels that only hand one child's value on."""
    while isinstance(node, lark.Tree) and node.data in (
        "member",
        "primary",
        "expr",
        "conditionalor",
        "conditionaland",
        "relation",
        "addition",
        "multiplication",
        "unary",
    ):
        kids = _children(node)
        if len(kids) != 1:
            return None
        node = kids[0]
    return node


def references(tree: lark.Tree, declared: Declared) -> list[str]:
    """Problems with the names a rule uses: undeclared fields, unknown identifiers or functions."""
    problems: list[str] = []
    _walk(tree, frozenset(), declared, problems)
    return list(dict.fromkeys(problems))


def _walk(node: Any, scope: frozenset[str], declared: Declared, problems: list[str]) -> None:
    if not isinstance(node, lark.Tree):
        return
    kids = _children(node)
    data = node.data
    if data == "member_dot":
        if not _field_problems(kids[0], str(kids[1]), scope, declared, problems):
            _walk(kids[0], scope, declared, problems)
    elif data == "member_dot_arg":
        target, method, *rest = kids
        _walk(target, scope, declared, problems)
        if str(method) not in METHODS:
            problems.append(f"calls unknown function {method}()")
        args = _children(rest[0]) if rest else []
        if str(method) in MACROS:
            variable = _root_ident(args[0]) if args else None
            if variable is None:
                problems.append(f"{method}() needs a variable name as its first argument")
                return
            scope = scope | {variable}
            args = args[1:]
        for arg in args:
            _walk(arg, scope, declared, problems)
    elif data == "ident_arg":
        name, *rest = kids
        if str(name) not in GLOBAL_FUNCTIONS:
            problems.append(f"calls unknown function {name}()")
        for arg in _children(rest[0]) if rest else []:
            _walk(arg, scope, declared, problems)
    elif data == "ident":
        name = str(kids[0])
        if name in scope or name == "now":
            return
        if name in PARAM_ROOTS:
            problems.append(f"uses {name} other than as {name}.<declared field>")
        elif name == USAGE:
            problems.append(f"uses {USAGE} other than as {USAGE}.<declared limit>.used or .remaining")
        else:
            problems.append(
                f"refers to unknown identifier '{name}' (only executionParams, userParams, {USAGE}, now)"
            )
    elif data in ("dot_ident", "dot_ident_arg"):
        problems.append(f"refers to unknown identifier '.{kids[0]}'")
    elif data == "member_object":
        problems.append("constructs a message, which rules cannot do")
    else:
        for child in kids:
            _walk(child, scope, declared, problems)


def _field_problems(
    target: Any, field: str, scope: frozenset[str], declared: Declared, problems: list[str]
) -> bool:
    """Adds the problems of `target.field` when it reads a root's field (a param, `usage.<limit>`
    or one of its fields); whether it does (and so is checked: the caller walks `target` if not)."""
    root = _root_ident(target)
    if root in scope:
        return False
    if root in PARAM_ROOTS:
        if field not in declared[root]:
            problems.append(f"refers to undeclared field {root}.{field}")
        return True
    limits = declared.get(USAGE, {})
    limit = _usage_limit(target)
    if limit is not None and USAGE not in scope:
        if limit not in limits:
            problems.append(
                f"refers to undeclared field {USAGE}.{limit}.{field} (no limit {limit} is declared)"
            )
        elif field not in USAGE_FIELDS:
            problems.append(
                f"refers to undeclared field {USAGE}.{limit}.{field} (a limit has used and remaining)"
            )
        return True
    if root == USAGE:
        if field not in limits:
            problems.append(f"refers to undeclared field {USAGE}.{field} (no limit {field} is declared)")
        else:
            problems.append(f"uses {USAGE}.{field} other than as {USAGE}.{field}.used or .remaining")
        return True
    return False


def result_kinds(node: Any, declared: Declared) -> Kinds:
    """The kinds of value `node` can yield, or None when not known statically."""
    if not isinstance(node, lark.Tree):
        return None
    kids = _children(node)
    data = node.data
    if data == "expr" and len(kids) == 3:
        then_kinds, else_kinds = result_kinds(kids[1], declared), result_kinds(kids[2], declared)
        return None if then_kinds is None or else_kinds is None else then_kinds | else_kinds
    if data in ("conditionalor", "conditionaland", "relation") and len(kids) == 2:
        return frozenset({"bool"})
    if data in ("addition", "multiplication") and len(kids) == 2:
        operator_node = kids[0]
        left = result_kinds(_children(operator_node)[0], declared)
        if left is None or "bool" in left:
            return frozenset({NON_BOOLEAN})
        if "timestamp" in left and operator_node.data == "addition_sub":
            return left | {"duration"}
        return left
    if data == "unary" and len(kids) == 2:
        if kids[0].data == "unary_not":
            return frozenset({"bool"})
        inner = result_kinds(kids[1], declared)
        return frozenset({NON_BOOLEAN}) if inner is None or "bool" in inner else inner
    if data == "member_dot":
        if _usage_limit(kids[0]) is not None and str(kids[1]) in USAGE_FIELDS:
            return frozenset({"double"})
        root = _root_ident(kids[0])
        param = declared.get(root or "", {}).get(str(kids[1]))
        return frozenset({CEL_KIND[param.type]}) if param else None
    if data == "member_dot_arg":
        kind = METHODS.get(str(kids[1]))
        return frozenset({kind}) if kind else None
    if data == "ident_arg":
        kind = GLOBAL_FUNCTIONS.get(str(kids[0]))
        return frozenset({kind}) if kind else None
    if data == "literal":
        kind = LITERAL_KIND.get(kids[0].type)
        return frozenset({kind}) if kind else None
    if data == "ident":
        return frozenset({"timestamp"}) if str(kids[0]) == "now" else None
    if data == "list_lit":
        return frozenset({"list"})
    if data == "map_lit":
        return frozenset({"map"})
    if len(kids) == 1:  # pass-through levels: expr, conditionalor, ..., member, primary, paren_expr
        return result_kinds(kids[0], declared)
    return None


def boolean_problem(kinds: Kinds) -> str | None:
    if kinds is None or kinds == {"bool"}:
        return None
    others = ", ".join(sorted(kinds - {"bool"}))
    if "bool" in kinds:
        return f"may yield {others} instead of a boolean"
    return f"yields {others}, not a boolean"


SAMPLE_NOW = datetime(2025, 6, 15, 12, 0, 0, tzinfo=UTC)
_SAMPLES: dict[str, list[Any]] = {
    "string": ["", "a", "0", "2025-06-15T12:00:00Z"],
    "number": [0.0, 1.5, -2.5, 1e9],
    "integer": [0, 1, -1, 1_000_000],
    "timestamp": [
        SAMPLE_NOW - timedelta(days=1),
        SAMPLE_NOW + timedelta(days=1),
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2100, 1, 1, tzinfo=UTC),
    ],
    "array<string>": [[], ["a"], ["a", "b"], ["0"]],
    "array<number>": [[], [1.5], [0.0, 2.0], [-1.0]],
}
VARIANTS = 4


def _sample(param: Param, variant: int, position: int) -> Any:
    if param.type == "boolean":
        # Offset by position so two booleans are seen both equal and different.
        return (variant + position * (variant // 2)) % 2 == 0
    return _SAMPLES[param.type][variant % VARIANTS]


def sample_activations(
    execution: list[Param], user: list[Param], limits: Sequence[str] = ()
) -> list[dict[str, Any]]:
    activations = []
    numbers = _SAMPLES["number"]
    for variant in range(VARIANTS):
        roots = {}
        for root, params in (("executionParams", execution), ("userParams", user)):
            values = {p.name: _sample(p, variant, i) for i, p in enumerate(params)}
            roots[root] = cel.params_map(params, values)
        usage = {
            name: {
                "used": numbers[(variant + i) % VARIANTS],
                "remaining": numbers[(variant + i + 1) % VARIANTS],
            }
            for i, name in enumerate(limits)
        }
        activations.append({**roots, USAGE: cel.usage_map(usage), "now": cel.timestamp(SAMPLE_NOW)})
    return activations


def sample_problem(tree: lark.Tree, activations: list[dict[str, Any]]) -> str | None:
    """A problem seen when running the rule on sample values: a non-boolean result or a type error."""
    runner = cel.program(tree)
    for activation in activations:
        try:
            result = runner.evaluate(activation)
        except RecursionError:
            raise  # the caller reports the rule as nested too deeply
        except Exception as exc:  # celpy raises CELEvalError, and occasionally plain errors
            if cel.is_type_error(exc):
                return f"has a type error: {cel.describe_eval_error(exc)}"
            continue
        if not isinstance(result, celtypes.BoolType | bool):
            return f"yields {cel.type_name(result)}, not a boolean"
    return None
