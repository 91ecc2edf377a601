"""The static cost of a rule (issue 30): the most steps (``policy.meter``) it can take, from its
parse tree and the largest values its params may hold, before it ever runs.

Every value a rule reads has a bound: a param's ``maxLength`` and ``maxItems`` (``policy.params``),
a literal its own size, a limit's use (``usage.<limit>``) its two numbers. From these the estimate
follows each node to a *shape*: what kinds of value it may yield (string, list, map, or a scalar)
and how large. A node costs one step plus its children's; a macro costs its target plus, for each
item the target may hold, one iteration and its body (with the macro's variable holding an item of
the target's shape); an operation that walks its operands (``in``, ``==``, ``+``, ``contains``,
``string()``) costs their volume, as the meter charges it. The estimate is an upper bound of what
the meter counts on any values within the bounds (tests/policy/test_cost.py checks it against the
meter on generated rules), so a rule whose estimate fits the budget can never be stopped by it, and
one that does not is refused before it is published.

Publishing refuses a version whose rules together may take more than ``RULE_BUDGET`` steps;
verification runs a version's rules inline when their estimate at the values sent is at most
``INLINE_STEPS``, and otherwise in an evaluation process (``services.rule_pool``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import lark

from policy import cel
from policy.meter import CHARS_PER_ITEM, CHARS_PER_STEP, ITEMS_PER_STEP, ITERATION
from policy.params import MAX_TIMESTAMP_LENGTH, Param

RULE_BUDGET = 10_000  # steps all the rules of one verification may take (about 75 ms here)
INLINE_STEPS = 200  # at most this, a verification's rules run on the API's own thread
_CAP = 10**15  # estimates stop growing here (far beyond any budget)

_MACROS = frozenset({"all", "exists", "exists_one", "map", "filter"})
_WALKING_RELATIONS = frozenset(
    {"relation_lt", "relation_le", "relation_gt", "relation_ge", "relation_eq", "relation_ne", "relation_in"}
)
_READING = frozenset(
    {"startsWith", "endsWith", "matches", "bytes", "timestamp", "duration", "int", "uint", "double"}
)
_SCALAR_FUNCTIONS = frozenset(
    {"has", "bool", "int", "uint", "double", "size", "type", "timestamp", "duration"}
)


@dataclass(frozen=True)
class Shape:
    """What a value may be: ``kinds`` among string, list, map and scalar; ``size`` the most
    characters of a string or items of a list or map; ``item`` the shape of a list's items or a
    map's keys and values."""

    kinds: frozenset[str]
    size: int = 1
    item: Shape | None = None

    def join(self, other: Shape | None) -> Shape:
        if other is None:
            return self
        item = self.item.join(other.item) if self.item is not None else other.item
        return Shape(self.kinds | other.kinds, max(self.size, other.size), item)

    @property
    def volume(self) -> int:
        """The most ``policy.meter.volume`` of a value of this shape."""
        best = 1
        if "string" in self.kinds:
            best = max(best, self.size // CHARS_PER_ITEM + 1)
        if self.kinds & {"list", "map"}:
            per_item = self.item.volume if self.item is not None else 1
            factor = 2 if "map" in self.kinds else 1  # a map walks its keys and its values
            best = max(best, min(_CAP, 1 + self.size * per_item * factor))
        return best


SCALAR = Shape(frozenset({"scalar"}))
CHAR = Shape(frozenset({"string"}), 1)


def _string(size: int) -> Shape:
    return Shape(frozenset({"string"}), size)


def param_shape(param: Param) -> Shape:
    """The largest value a declared param may hold."""
    if param.type == "string":
        return _string(param.length_limit or 0)
    if param.type == "array<string>":
        return Shape(frozenset({"list"}), param.items_limit or 0, _string(param.length_limit or 0))
    if param.type == "array<number>":
        return Shape(frozenset({"list"}), param.items_limit or 0, SCALAR)
    return SCALAR  # numbers, booleans, and timestamps (a CEL timestamp, not a string)


def value_shape(value: Any) -> Shape:
    """The shape of one JSON value as sent (for the estimate at the values of a verification)."""
    if isinstance(value, str):
        return _string(len(value))
    if isinstance(value, list):
        item: Shape | None = None
        for element in value:
            item = value_shape(element).join(item)
        return Shape(frozenset({"list"}), len(value), item or SCALAR)
    return SCALAR


Roots = dict[str, dict[str, Shape]]

# A limit's use as rules read it (``usage.<limit>``): a map of its two numbers (``cel.usage_map``
# holds no other field, whatever it is given), the most it may be, as declared or as sent.
USAGE_SHAPE = Shape(frozenset({"map"}), len(cel.USAGE_FIELDS), SCALAR)


def declared_roots(execution: list[Param], user: list[Param], limits: Sequence[str] = ()) -> Roots:
    """The shapes of every param at its bounds, and of each declared limit's use: what publishing
    estimates with."""
    return {
        "executionParams": {p.name: param_shape(p) for p in execution},
        "userParams": {p.name: param_shape(p) for p in user},
        cel.USAGE: dict.fromkeys(limits, USAGE_SHAPE),
    }


def value_roots(
    execution: dict[str, Any], user: dict[str, Any], usage: Mapping[str, Any] | None = None
) -> Roots:
    """The shapes of the values of one verification."""
    return {
        "executionParams": {name: value_shape(v) for name, v in execution.items()},
        "userParams": {name: value_shape(v) for name, v in user.items()},
        cel.USAGE: dict.fromkeys(usage or {}, USAGE_SHAPE),
    }


def estimate(tree: lark.Tree, roots: Roots, *, runnable: bool = False) -> int:
    """The most steps the rule of parse tree ``tree`` (already ``cel.runnable_tree``'s when
    ``runnable``) takes on params of shapes ``roots``."""
    program = tree if runnable else cel.runnable_tree(tree)
    return min(_CAP, ITERATION + _Estimator(roots).cost(program, {})[0])  # its activation, then its nodes


def _walk(*shapes: Shape) -> int:
    return sum(s.volume for s in shapes) // ITEMS_PER_STEP


class _Estimator:
    def __init__(self, roots: Roots) -> None:
        self.roots = roots

    def cost(self, node: Any, scope: dict[str, Shape]) -> tuple[int, Shape]:
        """(steps, shape) of a node of the program's tree; variables of enclosing macros in scope."""
        if not isinstance(node, lark.Tree):
            return 0, SCALAR
        handler = getattr(self, f"_{node.data}", None)
        steps, shape = handler(node, scope) if handler is not None else self._generic(node, scope)
        return min(_CAP, steps), shape

    def _children(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, list[Shape]]:
        steps, shapes = 1, []
        for child in node.children:
            if isinstance(child, lark.Tree):
                child_steps, shape = self.cost(child, scope)
                steps += child_steps
                shapes.append(shape)
        return steps, shapes

    def _generic(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, shapes = self._children(node, scope)
        if len(shapes) == 1:  # a level that hands its one child's value on
            return steps, shapes[0]
        joined = SCALAR
        for shape in shapes:
            joined = joined.join(shape)
        return steps, joined

    def _expr(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, shapes = self._children(node, scope)
        if len(shapes) == 3:  # c ? a : b
            return steps, shapes[1].join(shapes[2])
        return steps, shapes[0] if shapes else SCALAR

    def _operands(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, str, list[Shape]]:
        """A binary level ``[op(left), right]``: its steps, the operator and both shapes."""
        operator_node, right = node.children
        assert isinstance(operator_node, lark.Tree)
        steps, (left,) = self._children(operator_node, scope)
        right_steps, right_shape = self.cost(right, scope)
        return 1 + steps + right_steps, operator_node.data, [left, right_shape]

    def _relation(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        if len(node.children) != 2:
            return self._generic(node, scope)
        steps, operator, shapes = self._operands(node, scope)
        return steps + (_walk(*shapes) if operator in _WALKING_RELATIONS else 0), SCALAR

    def _addition(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        if len(node.children) != 2:
            return self._generic(node, scope)
        steps, operator, (left, right) = self._operands(node, scope)
        if operator != "addition_add":
            return steps, SCALAR
        joined_item = left.item.join(right.item) if left.item is not None else right.item
        shape = Shape(left.kinds | right.kinds, min(_CAP, left.size + right.size), joined_item)
        return steps + _walk(left, right), shape

    def _multiplication(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, _ = self._children(node, scope)
        return steps, SCALAR

    def _unary(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, shapes = self._children(node, scope)
        return steps, shapes[-1] if len(shapes) == 1 else SCALAR

    def _literal(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        token = node.children[0]
        kind = getattr(token, "type", "")
        if kind in ("STRING_LIT", "MLSTRING_LIT", "BYTES_LIT"):
            return 1, _string(len(str(token)))
        return 1, SCALAR

    def _list_lit(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, shapes = self._children(node, scope)
        items = shapes[0] if shapes else None  # the exprlist's join of its items
        count = _count(node.children[0]) if node.children and isinstance(node.children[0], lark.Tree) else 0
        return steps, Shape(frozenset({"list"}), count, items if count else None)

    def _map_lit(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, shapes = self._children(node, scope)
        inits = node.children[0] if node.children else None
        count = _count(inits) // 2 if isinstance(inits, lark.Tree) else 0
        return steps, Shape(frozenset({"map"}), count, shapes[0] if shapes else None)

    def _exprlist(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, shapes = self._children(node, scope)
        joined: Shape | None = None
        for shape in shapes:
            joined = shape.join(joined)
        return steps, joined or SCALAR

    _mapinits = _exprlist

    def _ident(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        """No step: cel-python's ``primary`` resolves the name it holds without visiting it."""
        name = str(node.children[0])
        if name in scope:
            return 0, scope[name]
        if name in self.roots:
            joined = SCALAR
            for shape in self.roots[name].values():
                joined = joined.join(shape)
            return 0, Shape(frozenset({"map"}), len(self.roots[name]), joined)
        return 0, SCALAR  # now

    def _member_dot(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        target, field = node.children
        steps, shape = self.cost(target, scope)
        root = _bare_ident(target)
        if root in self.roots and root not in scope:
            return steps + 1, self.roots[root].get(str(field), SCALAR)
        return steps + 1, shape.item or SCALAR

    def _member_index(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, (target, _) = self._children(node, scope)
        item = target.item or SCALAR
        return steps, item.join(CHAR) if "string" in target.kinds else item

    def _member_dot_arg(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        target, method, *rest = node.children
        name = str(method)
        if name in _MACROS:
            return self._macro(name, target, rest, scope)
        steps, target_shape = self.cost(target, scope)
        args_steps, args = self._args(rest, scope)
        steps += 1 + args_steps
        if name == "contains":
            return steps + _walk(target_shape, *args), SCALAR
        if name in _READING:
            return steps + sum(s.size for s in (target_shape, *args)) // CHARS_PER_STEP, SCALAR
        return steps, SCALAR  # size() and the timestamp getters

    def _args(self, rest: list[Any], scope: dict[str, Shape]) -> tuple[int, list[Shape]]:
        if not rest or not isinstance(rest[0], lark.Tree):
            return 0, []
        steps, shapes = self._children(rest[0], scope)
        return steps, shapes

    def _macro(self, name: str, target: Any, rest: list[Any], scope: dict[str, Shape]) -> tuple[int, Shape]:
        steps, target_shape = self.cost(target, scope)
        arguments = rest[0].children if rest and isinstance(rest[0], lark.Tree) else []
        variable = _bare_ident(arguments[0]) if arguments else None
        item = target_shape.item or (CHAR if "string" in target_shape.kinds else SCALAR)
        inner = {**scope, variable: item} if variable else scope
        body_steps, body_shape = self.cost(arguments[-1], inner) if len(arguments) > 1 else (0, SCALAR)
        steps += 2 + target_shape.size * (ITERATION + body_steps)
        if name == "map":
            return steps, Shape(frozenset({"list"}), target_shape.size, body_shape)
        if name == "filter":
            return steps, Shape(frozenset({"list"}), target_shape.size, item)
        return steps, SCALAR

    def _ident_arg(self, node: lark.Tree, scope: dict[str, Shape]) -> tuple[int, Shape]:
        name = str(node.children[0])
        args_steps, args = self._args(list(node.children[1:]), scope)
        steps = 1 + args_steps
        if name == "dyn":
            return steps, args[0] if args else SCALAR
        if name == "string":
            volume = sum(s.volume for s in args)
            return steps + volume // ITEMS_PER_STEP, _string(min(_CAP, volume * (CHARS_PER_ITEM + 4)))
        if name in _READING:
            steps += sum(s.size for s in args) // CHARS_PER_STEP
        if name == "bytes":
            return steps, _string(4 * sum(s.size for s in args))
        if name == "matches" and args:
            return steps, SCALAR
        return steps, SCALAR if name in _SCALAR_FUNCTIONS else _string(MAX_TIMESTAMP_LENGTH)


def _count(node: lark.Tree) -> int:
    return sum(1 for child in node.children if isinstance(child, lark.Tree))


def _bare_ident(node: Any) -> str | None:
    while isinstance(node, lark.Tree) and node.data in ("primary", "member") and len(node.children) == 1:
        node = node.children[0]
    if isinstance(node, lark.Tree) and node.data == "ident":
        return str(node.children[0])
    return None
