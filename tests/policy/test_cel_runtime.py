"""The one change policy.cel makes to cel-python's runtime: the generic aliases it subscripts only
inside ``cast(...)`` are erased (a third of a rule's evaluation was hashing ``Union`` members)."""

from __future__ import annotations

import ast
import inspect

import celpy.evaluation

from policy import cel

ERASED = {"Union", "Tuple", "List", "Dict"}


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
