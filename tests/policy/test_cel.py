"""What policy.cel changes in cel-python's runtime: the generic aliases it subscripts only inside
``cast(...)`` are erased (a third of a rule's evaluation was hashing ``Union`` members), the typing
ABCs it checks with ``isinstance`` are collections.abc's, and programs run a tree without the
pass-through levels whose node names are plain strings."""

from __future__ import annotations

import ast
import collections.abc
import inspect
from datetime import UTC, datetime
from typing import Any

import celpy
import celpy.evaluation
import lark
from celpy import celtypes

from policy import cel

ERASED = {"Union", "Tuple", "List", "Dict", "Iterable"}
NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


def _function_uses(tree: ast.AST) -> list[tuple[int, bool]]:
    """Each use of an erased name inside a function body: (line, whether it is subscripted within
    the type, the first argument, of a ``cast(...)`` call)."""
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    uses = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Name) and node.id in ERASED):
            continue
        owner = parents.get(node)
        in_function = False
        cursor: ast.AST | None = node
        while cursor is not None:
            if isinstance(cursor, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                in_function = True
                break
            cursor = parents.get(cursor)
        if not in_function or _in_annotation(node, parents):
            continue
        uses_as_cast_type = (
            isinstance(owner, ast.Subscript) and owner.value is node and _in_cast_type(owner, parents)
        )
        in_cast = uses_as_cast_type
        uses.append((node.lineno, in_cast))
    return uses


def _in_cast_type(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    """``node`` is (within) the type, the first argument, of a ``cast(...)`` call."""
    child, cursor = node, parents.get(node)
    while cursor is not None and not isinstance(cursor, ast.Call | ast.stmt):
        child, cursor = cursor, parents.get(cursor)
    return (
        isinstance(cursor, ast.Call)
        and isinstance(cursor.func, ast.Name)
        and cursor.func.id == "cast"
        and bool(cursor.args)
        and cursor.args[0] is child
    )


def _in_annotation(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    child, cursor = node, parents.get(node)
    while cursor is not None:
        if isinstance(cursor, ast.arg) and cursor.annotation is child:
            return True
        if isinstance(cursor, ast.FunctionDef | ast.AsyncFunctionDef) and cursor.returns is child:
            return True
        if isinstance(cursor, ast.AnnAssign) and cursor.annotation is child:
            return True
        child, cursor = cursor, parents.get(cursor)
    return False


def test_the_erased_names_are_only_cast_types_at_run_time() -> None:
    tree = ast.parse(inspect.getsource(celpy.evaluation))
    uses = _function_uses(tree)
    assert uses, "cel-python no longer subscripts these at run time: the erasure can go"
    assert [line for line, in_cast in uses if not in_cast] == []


def test_they_are_erased_and_rules_still_decide() -> None:
    assert all(isinstance(getattr(celpy.evaluation, name), cel._ErasedGeneric) for name in ERASED)
    program = cel.program(cel.parse("executionParams.amount <= userParams.max && 'a' in userParams.names"))
    activation = {
        "executionParams": celpy.json_to_cel({"amount": 3}),
        "userParams": celpy.json_to_cel({"max": 4, "names": ["a"]}),
    }
    assert program.evaluate(activation) is not None and bool(program.evaluate(activation)) is True
    activation["executionParams"] = celpy.json_to_cel({"amount": 5})
    assert bool(program.evaluate(activation)) is False


def test_the_typing_abcs_are_collections_abc_and_maps_still_build() -> None:
    for module in (celpy.evaluation, celtypes):
        assert module.Sequence is collections.abc.Sequence and module.Mapping is collections.abc.Mapping
    # a MapType from a mapping and from pairs, an activation from a mapping of functions
    assert celtypes.MapType({"a": 1}) == celtypes.MapType([("a", 1)])
    size = celpy.evaluation.function_size
    assert celpy.evaluation.Activation(functions={"f": size}).functions["f"] is size
    assert celpy.evaluation.Activation(functions=[size]).functions[size.__name__] is size


# --- the pass-through levels left out of a program ------------------------------------------------

_EXPRESSIONS = [
    "e.amount <= u.max",
    "size(u.payees) == 0 || e.payee in u.payees",
    "e.amount + 1 > u.max - 2 * 3",
    "-e.amount < 0 && !(e.flag)",
    "e.flag ? e.amount : u.max",
    "e.flag ? (e.amount / 0 == 1) : false",
    "e.missing == 1 || true",
    "true || e.missing == 1",
    "e.missing == 1 && false",
    "e.count * 9223372036854775807 > 0",
    "e.amount / 0 == 1",
    "e.tags[5] == 'a'",
    "e.tags[0] == 'a' && e.tags.size() == 2",
    "u.payees.all(p, p.startsWith('B') || p.size() > 3)",
    "u.payees.exists(p, p == e.payee)",
    "u.payees.exists_one(p, p.contains('o'))",
    "u.payees.map(p, p + '!') == ['Bob!', 'Alice!']",
    "u.payees.filter(p, p != 'Bob').size() == 1",
    "has(e.amount) && !has(e.missing)",
    "dyn(e.amount) == 950",
    "{'a': 1, 'b': [1, 2]}['b'][1] == 2",
    "[1, 2, 3][e.count] == 3",
    "e.when >= now - duration('1h')",
    "now.getHours() >= 0",
    "timestamp('2026-01-01T00:00:00Z') < now",
    "e.currency > 1",
    "nosuch(1)",
    "e.amount",
    "((((e.amount)))) == ((950))",
    "1.5 * 2.0 == 3.0 && 7 % 3 == 1 && 2u + 3u == 5u",
    "'x' in ['x', 'y'] && 2 in [1.0, 2.0]",
    "e.amount == 950.0 && e.amount != 951",
    "string(e.amount) == '950' && int('7') == 7",
    "e{} == e",  # an object construction: a member that is not only a primary
    "u.payees.all(p, u.payees.exists(q, q == p)) && has(e.tags)",
]


def _outcome(runner: celpy.Runner, activation: dict[str, Any]) -> tuple[str, str]:
    try:
        value = runner.evaluate(activation)
    except Exception as exc:
        return ("raised", f"{type(exc).__name__}: {cel.describe_eval_error(exc)}")
    return ("value", f"{type(value).__name__}: {value!r}")


def test_a_program_without_pass_through_levels_answers_as_the_parsed_tree() -> None:
    """Every operator, macro, error and short circuit answers the same with and without the levels
    ``cel.program`` leaves out, on two activations (one where the rules pass, one where fields are
    missing or of other types), and the programs walk fewer nodes."""
    activations: list[dict[str, Any]] = [
        {
            "e": celpy.json_to_cel(
                {
                    "amount": 950,
                    "payee": "Bob",
                    "flag": True,
                    "count": 2,
                    "tags": ["a", "b"],
                    "currency": "EUR",
                }
            ),
            "u": celpy.json_to_cel({"max": 2500, "payees": ["Bob", "Alice"]}),
        },
        {
            "e": celpy.json_to_cel({"amount": -3, "payee": "Zed", "flag": False, "count": 9, "tags": []}),
            "u": celpy.json_to_cel({"max": 1, "payees": []}),
        },
    ]
    for activation in activations:
        activation["now"] = cel.timestamp(NOW)
        activation["e"]["when"] = cel.timestamp(NOW)
    outcomes = set()
    for expression in _EXPRESSIONS:
        tree = cel.parse(expression)
        as_parsed = cel.ENV.program(tree, functions=cel.FUNCTIONS)
        collapsed = cel.program(tree)
        assert _nodes(cel._without_pass_through(tree)) < _nodes(tree)
        assert {type(node.data) for node in cel.runnable_tree(tree).iter_subtrees()} == {str}
        for activation in activations:
            expected = _outcome(as_parsed, activation)
            assert _outcome(collapsed, activation) == expected, expression
            outcomes.add(expected[0])
    assert outcomes == {"value", "raised"}


def _nodes(tree: lark.Tree) -> int:
    return sum(1 for _ in tree.iter_subtrees())
