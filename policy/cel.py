"""The CEL runtime shared by publish-time checks and verify-time evaluation (cel-python, `celpy`).

Two deliberate departures from cel-python's defaults, both toward the CEL specification:

- Comparisons (`<`, `<=`, `>`, `>=`, `==`, `!=`, `in`) work across int, uint and double, as the CEL
  spec's runtime numeric comparison does, so `executionParams.amount <= userParams.max` works when
  one param is an `integer` and the other a `number`. Arithmetic still needs matching types, as in
  CEL (`double(executionParams.count) * userParams.price`).
- Errors are turned into short readable reasons instead of celpy's dumps of the activation.
"""

from __future__ import annotations

import collections.abc
import operator
import re
import threading
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, cast

import celpy
import celpy.evaluation
import lark
from celpy import celtypes
from celpy.celparser import CELParseError
from celpy.evaluation import CELEvalError, base_functions, boolean

from policy.meter import ITERATION, charge, charge_walk, text_work
from policy.params import Param, parse_timestamp


class _ErasedGeneric:
    """Stands for ``typing.Union`` and friends where cel-python only subscripts them at run time
    inside ``cast(...)``: ``cast`` ignores its type, but building ``Union[Result, NameContainer]``
    hashes every member of the big ``Result`` union on each variable lookup, about a third of a
    rule's evaluation (and ``Iterable[Result]`` in each ``in``, 30 µs). Erased in
    ``celpy.evaluation``'s namespace only: its module-level aliases and annotations were built at
    import, before this, and nothing else there uses these names (checked for the pinned 0.5
    series by ``tests/policy/test_cel.py``)."""

    def __getitem__(self, _: object) -> type:
        return object


for _name in ("Union", "Tuple", "List", "Dict", "Iterable"):
    setattr(celpy.evaluation, _name, _ErasedGeneric())

# ``typing.Sequence`` and ``typing.Mapping``, which cel-python checks values against with
# ``isinstance`` on each evaluation (an activation's functions, a map's items: some 14 checks per
# two-operand rule), replaced by the ``collections.abc`` classes they stand for: the same answers
# (and the same subscripts in a ``cast``), without typing's ``__instancecheck__`` around them.
for _module in (celpy.evaluation, celtypes):
    for _name in ("Sequence", "Mapping"):
        setattr(_module, _name, getattr(collections.abc, _name))


class _MeteredEvaluator(celpy.evaluation.Evaluator):
    """cel-python's evaluator, charging the current meter (``policy.meter``) a step per node it
    visits and per macro iteration (a nested evaluation with the macro's variable bound)."""

    def _visit_tree(self, tree: lark.Tree) -> Any:
        charge(1)
        return super()._visit_tree(tree)

    def sub_evaluator(self, ast: lark.Tree) -> celpy.evaluation.Evaluator:
        return _MeteredEvaluator(ast, activation=self.activation)

    def evaluate(self, context: Any = None) -> Any:
        if context:
            charge(ITERATION)
        return super().evaluate(context)


class _MeteredRunner(celpy.InterpretedRunner):
    def evaluate(self, context: Any) -> Any:
        return _MeteredEvaluator(ast=self.ast, activation=self.new_activation()).evaluate(context)


ENV = celpy.Environment(runner_class=_MeteredRunner)
# Rules use no protobuf types; without these annotations each evaluation skips loading them.
ENV.annotations = {}
_PARSE_LOCK = threading.Lock()
MAX_EXPRESSION_LENGTH = 4096

_NUMERIC = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)


def _is_numeric(value: Any) -> bool:
    return isinstance(value, _NUMERIC) and not isinstance(value, celtypes.BoolType)


def _mixed_numbers(a: Any, b: Any) -> bool:
    return _is_numeric(a) and _is_numeric(b) and type(a) is not type(b)


def _as_python_number(value: Any) -> int | float:
    return float(value) if isinstance(value, celtypes.DoubleType) else int(value)


def _numeric_relation(op: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
    strict = boolean(cast(Any, op))

    def relation(a: Any, b: Any) -> Any:
        if _mixed_numbers(a, b):
            # Python compares int with float exactly (no rounding of large ints).
            return celtypes.BoolType(op(_as_python_number(a), _as_python_number(b)))
        return strict(a, b)

    relation.__name__ = f"numeric_{op.__name__}"
    return relation


_numeric_eq = _numeric_relation(operator.eq)
_strict_in = base_functions["_in_"]


def _numeric_in(item: Any, container: Any) -> Any:
    if (
        _is_numeric(item)
        and isinstance(container, celtypes.ListType)
        and all(_is_numeric(element) for element in container)
    ):
        number = _as_python_number(item)
        return celtypes.BoolType(any(number == _as_python_number(element) for element in container))
    return _strict_in(item, container)


def _walking(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function``, charging first the steps of walking every operand (``policy.meter.work``)."""

    def walking(*args: Any) -> Any:
        charge_walk(*args)
        return function(*args)

    walking.__name__ = f"metered_{getattr(function, '__name__', 'function')}"
    return walking


def _reading(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` of a string (and a pattern or another string), charged by their characters."""

    def reading(*args: Any) -> Any:
        charge(sum(text_work(a) for a in args))
        return function(*args)

    reading.__name__ = f"metered_{getattr(function, '__name__', 'function')}"
    return reading


_RELATIONS = {
    "_<_": _numeric_relation(operator.lt),
    "_<=_": _numeric_relation(operator.le),
    "_>_": _numeric_relation(operator.gt),
    "_>=_": _numeric_relation(operator.ge),
    "_==_": _numeric_eq,
    "_!=_": _numeric_relation(operator.ne),
    "_in_": _numeric_in,
    "_+_": base_functions["_+_"],
    "contains": base_functions["contains"],
    "string": base_functions["string"],
}
_TEXT = ("startsWith", "endsWith", "matches", "bytes", "timestamp", "duration", "int", "uint", "double")
FUNCTIONS: dict[str, Any] = {
    **{name: _walking(function) for name, function in _RELATIONS.items()},
    **{name: _reading(base_functions[name]) for name in _TEXT},
}


def parse(expression: str) -> lark.Tree:
    """The parse tree of a CEL expression; raises CELParseError (or ValueError when too long)."""
    if len(expression) > MAX_EXPRESSION_LENGTH:
        raise ValueError(f"is longer than {MAX_EXPRESSION_LENGTH} characters")
    with _PARSE_LOCK:
        return ENV.compile(expression)


# Grammar levels that, holding a single subtree, only hand its value on: cel-python's evaluator
# visits each of them (a method lookup, a list, a log call) on the way down to every operand, so a
# two-operand rule walks some forty nodes. ``program`` runs a copy of the tree without them.
_PASS_THROUGH = frozenset(
    {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary"}
)


def _without_pass_through(tree: lark.Tree, parent: str = "") -> lark.Tree:
    """A copy of ``tree`` with each pass-through level that holds one subtree replaced by that
    subtree, and a ``member`` that is only a ``primary`` by the ``primary`` (the one case in which
    cel-python's ``member`` only hands the value on), except under a ``member_object``, which tells
    a type name from a value by whether its child is a ``primary``. Every other node, token and
    macro argument is kept: macros find their variable with ``find_data("ident")``, which finds it
    as well."""
    node = tree
    while (
        len(node.children) == 1
        and isinstance(node.children[0], lark.Tree)
        and (
            node.data in _PASS_THROUGH
            or (node.data == "member" and node.children[0].data == "primary" and parent != "member_object")
        )
    ):
        node = node.children[0]
    children = [_without_pass_through(c, node.data) if isinstance(c, lark.Tree) else c for c in node.children]
    # the grammar rule's name as a plain str: lark's parser makes it a Token, whose __eq__ is Python's, and
    # the evaluator compares it (a chain of ``child.data == "..."``) and looks it up as a method
    # name (getattr) at every node: some 70 Python calls per two-operand rule
    return lark.Tree(str(node.data), children, node.meta)


# Parse trees deeper than this run as parsed: how deep a rule may nest before it is refused ("nested
# too deeply", where evaluation exhausts Python's recursion) stays what it was; between 410 and 610
# levels (40 and 60 parentheses) on the 0.5 series, far beyond any rule's 20 to 60.
_COLLAPSE_DEPTH = 300


def _depth_within(tree: lark.Tree, limit: int) -> bool:
    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return False
        stack.extend((c, depth + 1) for c in node.children if isinstance(c, lark.Tree))
    return True


def runnable_tree(tree: lark.Tree) -> lark.Tree:
    """The tree ``program`` runs: the parsed one without its pass-through levels (see
    ``_without_pass_through``), unless it is deeper than ``_COLLAPSE_DEPTH``."""
    return _without_pass_through(tree) if _depth_within(tree, _COLLAPSE_DEPTH) else tree


def program(tree: lark.Tree) -> celpy.Runner:
    """The runnable program of a parsed rule."""
    return ENV.program(runnable_tree(tree), functions=FUNCTIONS)


def describe_parse_error(exc: Exception) -> str:
    if isinstance(exc, CELParseError):
        where = f" at line {exc.line}, column {exc.column}" if exc.line and exc.column else ""
        return f"syntax error{where}"
    return str(exc)


_TYPE_NAMES = {
    celtypes.BoolType: "bool",
    celtypes.IntType: "int",
    celtypes.UintType: "uint",
    celtypes.DoubleType: "double",
    celtypes.StringType: "string",
    celtypes.BytesType: "bytes",
    celtypes.TimestampType: "timestamp",
    celtypes.DurationType: "duration",
    celtypes.ListType: "list",
    celtypes.MapType: "map",
    type(None): "null",
    bool: "bool",
    int: "int",
    float: "double",
    str: "string",
    list: "list",
    dict: "map",
}
_OPERATORS = {
    "relation_lt": "<",
    "relation_le": "<=",
    "relation_gt": ">",
    "relation_ge": ">=",
    "relation_eq": "==",
    "relation_ne": "!=",
    "relation_in": "in",
    "addition_add": "+",
    "addition_sub": "-",
    "multiplication_mul": "*",
    "multiplication_div": "/",
    "multiplication_mod": "%",
}


def type_name(value: Any) -> str:
    for cls, name in _TYPE_NAMES.items():
        if isinstance(value, cls):
            return name
    return type(value).__name__


def _class_name(text: str) -> str:
    short = text.rsplit(".", 1)[-1]
    for cls, name in _TYPE_NAMES.items():
        if cls.__name__ == short:
            return name
    return short


# the operator as cel-python names it: Token('RULE', 'relation_gt') in a parsed tree, a str in a program
_NO_OVERLOAD = re.compile(r"found no matching overload for (?:Token\('RULE', )?'(\w+)'")


def describe_eval_error(exc: BaseException) -> str:
    """A short reason for a failed evaluation (no activation dumps, no internal class paths)."""
    if isinstance(exc, RecursionError):
        return "expression is nested too deeply"
    if not isinstance(exc, CELEvalError):
        return f"{type(exc).__name__}: {exc}"[:200]
    message = str(exc.args[0]) if exc.args else "evaluation error"
    if (found := re.match(r"no such member in mapping: '([^']*)'", message)) is not None:
        return f"no value for field '{found.group(1)}'"
    if (found := re.match(r"undeclared reference to '([^']*)'", message)) is not None:
        return f"undeclared reference to '{found.group(1)}'"
    if (found := _NO_OVERLOAD.match(message)) is not None:
        operands = [_class_name(c) for c in re.findall(r"<class '([\w.]+)'>", message)]
        op = _OPERATORS.get(found.group(1), found.group(1))
        return f"no matching overload for '{op}' applied to ({', '.join(operands)})"
    if message in ("invalid_argument", "return error for overflow") and len(exc.args) > 2 and exc.args[2]:
        # celpy's own label is generic; the underlying Python error says what happened.
        detail = str(exc.args[2][0])
        message = "integer overflow" if detail == "overflow" else detail
    message = re.sub(r"<class '([\w.]+)'>", lambda m: _class_name(m.group(1)), message)
    message = re.sub(r"\b(?:String|Int|Uint|Double|Bool)Type\(([^()]*)\)", r"\1", message)
    return message[:200]


def is_type_error(exc: BaseException) -> bool:
    """True for errors CEL's type checker would have reported (no overload, field of a scalar)."""
    return isinstance(exc, CELEvalError) and len(exc.args) > 1 and exc.args[1] is TypeError


def to_cel(param: Param, value: Any) -> Any:
    """A JSON value of a declared param as a CEL value: integer -> int, number -> double, etc."""
    type_ = param.type
    if type_ == "integer":
        return celtypes.IntType(int(value))
    if type_ == "number":
        return celtypes.DoubleType(float(value))
    if type_ == "boolean":
        return celtypes.BoolType(bool(value))
    if type_ == "string":
        return celtypes.StringType(value)
    if type_ == "timestamp":
        parsed = parse_timestamp(value) if isinstance(value, str) else value
        if not isinstance(parsed, datetime):
            raise ValueError("not a timestamp")
        return timestamp(parsed)
    if type_ == "array<string>":
        return celtypes.ListType([celtypes.StringType(v) for v in value])
    if type_ == "array<number>":
        return celtypes.ListType([celtypes.DoubleType(float(v)) for v in value])
    raise ValueError(f"unknown type {type_!r}")


def timestamp(moment: datetime) -> celtypes.TimestampType:
    if moment.tzinfo is None:
        raise ValueError("a timestamp needs a time zone")
    return celtypes.TimestampType(moment)


def params_map(declared: list[Param], values: dict[str, Any]) -> celtypes.MapType:
    """The CEL map of the declared params present in `values`; a value that does not convert is left
    out, so a rule reading it errors with "no value for field" instead of misbehaving."""
    out: dict[Any, Any] = {}
    for param in declared:
        if param.name in values:
            try:
                out[celtypes.StringType(param.name)] = to_cel(param, values[param.name])
            except (TypeError, ValueError, OverflowError):
                continue
    return celtypes.MapType(out)


USAGE = "usage"  # the root rules read a mandate's use from (issue 31)
USAGE_FIELDS = ("used", "remaining")  # each limit's, numbers before this verification
_USAGE_PARAMS = [Param(field, "number") for field in USAGE_FIELDS]


def usage_map(usage: Mapping[str, Mapping[str, Any]] | None) -> celtypes.MapType:
    """``usage`` as the CEL map rules read: per limit, ``used`` and ``remaining`` as doubles, as a
    ``number`` param is (a whole number is exact: a bound is at most ``policy.limits.MAX_NUMBER``).
    A field that is not a number is left out, as ``params_map`` leaves out a value that does not
    convert, so a rule reading it errors with "no value for field"."""
    out: dict[Any, Any] = {}
    for name, fields in (usage or {}).items():
        if isinstance(fields, Mapping):
            numbers = {
                field: value
                for field, value in fields.items()
                if isinstance(value, int | float) and not isinstance(value, bool)
            }
            out[celtypes.StringType(name)] = params_map(_USAGE_PARAMS, numbers)
    return celtypes.MapType(out)
