"""Param types, param declarations and value validation (CONTRACT section 6)."""

from __future__ import annotations

from typing import Any

import pytest

from policy.params import PARAM_TYPES, Param, check_value, parse_params, validate_values

ACCEPTED: list[tuple[str, Any]] = [
    ("string", ""),
    ("string", "EUR"),
    ("number", 0),
    ("number", -3),
    ("number", 1.5),
    ("number", 10**20),
    ("integer", 0),
    ("integer", -7),
    ("integer", 2**63 - 1),
    ("integer", -(2**63)),
    ("integer", 5.0),
    ("boolean", True),
    ("boolean", False),
    ("timestamp", "2025-01-31T12:00:00Z"),
    ("timestamp", "2025-01-31T12:00:00.123456789+02:00"),
    ("timestamp", "2025-01-31t12:00:00z"),
    ("timestamp", "2024-02-29T23:59:59-05:30"),
    ("array<string>", []),
    ("array<string>", ["a", ""]),
    ("array<number>", []),
    ("array<number>", [1, 2.5, -3]),
]
REFUSED: list[tuple[str, Any]] = [
    ("string", 1),
    ("string", None),
    ("string", ["a"]),
    ("number", True),
    ("number", "1"),
    ("number", None),
    ("number", float("nan")),
    ("number", float("inf")),
    ("integer", 1.5),
    ("integer", True),
    ("integer", "1"),
    ("integer", 2**63),
    ("integer", float("inf")),
    ("boolean", 1),
    ("boolean", "true"),
    ("boolean", None),
    ("timestamp", "2025-01-31T12:00:00"),
    ("timestamp", "2025-01-31"),
    ("timestamp", "2025-02-30T12:00:00Z"),
    ("timestamp", "2025-01-31 12:00:00Z"),
    ("timestamp", "2025-13-01T12:00:00Z"),
    ("timestamp", "2025-01-31T24:00:00Z"),
    ("timestamp", 1738324800),
    ("array<string>", "a"),
    ("array<string>", ["a", 1]),
    ("array<string>", None),
    ("array<number>", [1, "2"]),
    ("array<number>", [True]),
    ("array<number>", {"a": 1}),
]


@pytest.mark.parametrize(("type_", "value"), ACCEPTED, ids=[f"{t}-{v!r}" for t, v in ACCEPTED])
def test_values_of_the_declared_type_are_accepted(type_: str, value: Any) -> None:
    assert check_value(Param("p", type_), value) is None


@pytest.mark.parametrize(("type_", "value"), REFUSED, ids=[f"{t}-{v!r}" for t, v in REFUSED])
def test_values_of_another_type_are_refused(type_: str, value: Any) -> None:
    problem = check_value(Param("p", type_), value)
    assert problem is not None and problem.startswith("must be")


def test_every_contract_type_is_known() -> None:
    assert PARAM_TYPES == (
        "string",
        "number",
        "integer",
        "boolean",
        "timestamp",
        "array<string>",
        "array<number>",
    )


def test_parse_params_reads_names_types_descriptions_and_defaults() -> None:
    raw = [
        {"name": "max", "type": "number", "description": "Most per payment", "default": 100},
        {"name": "currencies", "type": "array<string>"},
        {"name": "_limit2", "type": "integer", "default": 3.0},
    ]
    params, errors = parse_params(raw, where="userParams", allow_defaults=True)
    assert errors == []
    assert params[0] == Param("max", "number", "Most per payment", 100, True)
    assert params[1] == Param("currencies", "array<string>")
    assert params[2].default == 3 and isinstance(params[2].default, int)
    assert [p.as_json() for p in params] == [
        {"name": "max", "type": "number", "description": "Most per payment", "default": 100},
        {"name": "currencies", "type": "array<string>"},
        {"name": "_limit2", "type": "integer", "default": 3},
    ]


def test_a_null_default_is_a_declared_default_and_must_fit_the_type() -> None:
    _, errors = parse_params(
        [{"name": "a", "type": "string", "default": None}], where="u", allow_defaults=True
    )
    assert errors == ["u.0.default must be a string"]


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("nope", "userParams must be an array"),
        ([1], "userParams.0 must be an object with name and type"),
        ([{"name": "1a", "type": "string"}], "userParams.0.name must match"),
        ([{"name": "a-b", "type": "string"}], "userParams.0.name must match"),
        ([{"type": "string"}], "userParams.0.name must match"),
        ([{"name": "a", "type": "float"}], "userParams.0.type must be one of string, number, integer"),
        ([{"name": "a"}], "userParams.0.type must be one of"),
        ([{"name": "a", "type": "string", "description": 3}], "userParams.0.description must be a string"),
        ([{"name": "a", "type": "string", "extra": 1}], "userParams.0.extra is not a known field"),
        ([{"name": "a", "type": "integer", "default": 1.5}], "userParams.0.default must be an integer"),
        (
            [{"name": "a", "type": "string"}, {"name": "a", "type": "number"}],
            "userParams.1.name 'a' is declared twice",
        ),
    ],
)
def test_parse_params_refuses_bad_declarations(raw: Any, message: str) -> None:
    _, errors = parse_params(raw, where="userParams", allow_defaults=True)
    assert any(e.startswith(message) for e in errors), errors


def test_defaults_only_where_allowed() -> None:
    raw = [{"name": "amount", "type": "number", "default": 1}]
    _, errors = parse_params(raw, where="executionParams", allow_defaults=False)
    assert errors == ["executionParams.0.default is not allowed here (only userParams have defaults)"]


def test_absent_params_are_an_empty_list() -> None:
    assert parse_params(None, where="executionParams", allow_defaults=False) == ([], [])


DECLARED = [
    Param("amount", "number"),
    Param("count", "integer"),
    Param("currencies", "array<string>", default=["EUR"], has_default=True),
]


def test_validate_values_accepts_exactly_the_declared_names() -> None:
    values, errors = validate_values(
        DECLARED, {"currencies": ["USD"], "count": 2.0, "amount": 5}, where="userParams", fill_defaults=False
    )
    assert errors == []
    assert values == {"amount": 5, "count": 2, "currencies": ["USD"]}
    assert list(values) == ["amount", "count", "currencies"]


def test_validate_values_reports_missing_extra_and_mistyped_names() -> None:
    values, errors = validate_values(
        DECLARED,
        {"amount": "5", "currencies": ["EUR"], "note": "x"},
        where="executionParams",
        fill_defaults=False,
    )
    assert errors == [
        "executionParams.amount must be a number",
        "executionParams.count is missing",
        "executionParams.note is not declared",
    ]
    assert values == {"currencies": ["EUR"]}


def test_validate_values_fills_defaults_only_when_asked() -> None:
    values, errors = validate_values(DECLARED, {"amount": 1, "count": 1}, where="u", fill_defaults=True)
    assert errors == [] and values["currencies"] == ["EUR"]
    _, errors = validate_values(DECLARED, {"amount": 1, "count": 1}, where="u", fill_defaults=False)
    assert errors == ["u.currencies is missing"]
    _, errors = validate_values(DECLARED, {"amount": 1}, where="u", fill_defaults=True)
    assert errors == ["u.count is missing"]


def test_validate_values_needs_an_object_and_treats_absent_as_empty() -> None:
    assert validate_values(DECLARED, [1], where="e", fill_defaults=False) == ({}, ["e must be an object"])
    assert validate_values([], None, where="e", fill_defaults=False) == ({}, [])
    assert validate_values([], {}, where="e", fill_defaults=False) == ({}, [])
    _, errors = validate_values([], {"x": 1}, where="e", fill_defaults=False)
    assert errors == ["e.x is not declared"]


def test_filled_default_is_a_copy() -> None:
    values, _ = validate_values(DECLARED, {"amount": 1, "count": 1}, where="u", fill_defaults=True)
    values["currencies"].append("USD")
    assert DECLARED[2].default == ["EUR"]
