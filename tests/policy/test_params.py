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


def test_declared_bounds_are_read_checked_and_kept_only_when_declared() -> None:
    params, errors = parse_params(
        [
            {"name": "memo", "type": "string", "maxLength": 200},
            {"name": "tags", "type": "array<string>", "maxItems": 5, "maxLength": 10},
            {"name": "amounts", "type": "array<number>"},
            {"name": "amount", "type": "number"},
        ],
        where="executionParams",
        allow_defaults=False,
    )
    assert errors == []
    memo, tags, amounts, amount = params
    assert (memo.length_limit, memo.items_limit) == (200, None)
    assert (tags.length_limit, tags.items_limit) == (10, 5)
    assert (amounts.length_limit, amounts.items_limit) == (None, 100)  # the default
    assert (amount.length_limit, amount.items_limit) == (None, None)
    assert memo.as_json() == {"name": "memo", "type": "string", "maxLength": 200}
    assert amounts.as_json() == {"name": "amounts", "type": "array<number>"}  # a digest unchanged
    assert check_value(memo, "x" * 200) is None
    assert check_value(memo, "x" * 201) == "is 201 characters long, more than its maxLength of 200"
    assert check_value(tags, ["a"] * 6) == "has 6 items, more than its maxItems of 5"
    assert check_value(tags, ["a", "x" * 11]) == "item 1 is 11 characters long, more than its maxLength of 10"
    assert check_value(amounts, [1.0] * 101) == "has 101 items, more than its maxItems of 100"
    assert (
        check_value(Param("s", "string"), "x" * 1001)
        == "is 1,001 characters long, more than its maxLength of 1,000"
    )
    assert check_value(Param("t", "timestamp"), "2025-01-31T12:00:00." + "1" * 100 + "Z") is not None


@pytest.mark.parametrize(
    ("item", "message"),
    [
        (
            {"name": "n", "type": "number", "maxLength": 5},
            "p.0.maxLength applies only to string and array<string> params",
        ),
        (
            {"name": "s", "type": "string", "maxItems": 5},
            "p.0.maxItems applies only to array<string> and array<number> params",
        ),
        (
            {"name": "s", "type": "string", "maxLength": 0},
            "p.0.maxLength must be a whole number from 1 to 10,000",
        ),
        (
            {"name": "s", "type": "string", "maxLength": 10_001},
            "p.0.maxLength must be a whole number from 1 to 10,000",
        ),
        (
            {"name": "s", "type": "string", "maxLength": 2.5},
            "p.0.maxLength must be a whole number from 1 to 10,000",
        ),
        (
            {"name": "s", "type": "string", "maxLength": True},
            "p.0.maxLength must be a whole number from 1 to 10,000",
        ),
        (
            {"name": "a", "type": "array<number>", "maxItems": "5"},
            "p.0.maxItems must be a whole number from 1 to 10,000",
        ),
        (
            {"name": "s", "type": "string", "maxLength": 3, "default": "four"},
            "p.0.default is 4 characters long, more than its maxLength of 3",
        ),
    ],
)
def test_bounds_that_cannot_be_are_refused(item: dict[str, Any], message: str) -> None:
    assert parse_params([item], where="p", allow_defaults=True) == ([], [message])


def test_undeclared_names_are_reported_ten_at_most_and_quoted_when_odd() -> None:
    values = {f"extra{i}": 1 for i in range(25)} | {"x" * 500: 1, "a b": 2}
    _, errors = validate_values([], values, where="e", fill_defaults=False)
    assert errors[:2] == ["e.extra0 is not declared", "e.extra1 is not declared"]
    assert errors[-1] == "e has 17 more names that are not declared"
    assert len(errors) == 11
    _, odd = validate_values([], {"a b": 1, "y" * 100: 2}, where="e", fill_defaults=False)
    assert odd == ["e.'a b' is not declared", f"e.{'y' * 64!r}... is not declared"]


def test_a_timestamp_past_the_range_once_in_utc_says_so() -> None:
    for value in ("9999-12-31T23:59:59-14:00", "0001-01-01T00:00:00+00:01"):
        assert check_value(Param("t", "timestamp"), value) == (
            "is out of range: in UTC it must fall between 0001-01-01 and 9999-12-31"
        )


def test_a_param_carries_a_label_per_language_a_unit_and_descriptions() -> None:
    """Issue 34: what the subject reads of a param: its label in the page's language (ENG, else
    one made from the name, never the raw name), its unit and description."""
    raw = [
        {
            "name": "weeklyLimit",
            "type": "number",
            "description": "At most this much a week.",
            "label": {"ENG": "Weekly limit", "PRT": "Limite semanal"},
            "descriptions": {"PRT": "No máximo isto por semana."},
            "unit": "EUR",
        },
        {"name": "max_amount", "type": "number", "label": "Highest amount"},
        {"name": "payeeIBANs", "type": "array<string>"},
    ]
    params, errors = parse_params(raw, where="userParams", allow_defaults=True)
    assert errors == []
    weekly, highest, payees = params
    assert (weekly.label_in("PRT"), weekly.label_in("FRA"), weekly.unit) == (
        "Limite semanal",
        "Weekly limit",
        "EUR",
    )
    assert (weekly.description_in("PRT"), weekly.description_in("SPA")) == (
        "No máximo isto por semana.",
        "At most this much a week.",
    )
    assert highest.label == {"ENG": "Highest amount"} and highest.label_in("SPA") == "Highest amount"
    assert payees.label_in("ENG") == "Payee IBANs" and payees.unit is None  # made from the name
    assert parse_params([p.as_json() for p in params], where="userParams", allow_defaults=True)[0] == params
    assert "label" not in Param("x", "number").as_json()  # a version without them keeps its digest


@pytest.mark.parametrize(
    ("extra", "problem"),
    [
        ({"label": ""}, "userParams.0.label.ENG must be one line of 1 to 100 characters"),
        ({"label": "two\nlines"}, "userParams.0.label.ENG must be one line"),
        ({"label": {"DEU": "Grenze"}}, "userParams.0.label.DEU is not one of ENG, PRT, SPA, FRA"),
        ({"label": ["x"]}, "userParams.0.label must be a string or an object"),
        ({"label": "x" * 101}, "userParams.0.label.ENG must be one line of 1 to 100 characters"),
        ({"unit": "euros and cents!!"}, "userParams.0.unit must be one line of 1 to 16 characters"),
        ({"unit": "EUR\u202e"}, "userParams.0.unit must be one line"),
        ({"descriptions": {"PRT": 5}}, "userParams.0.descriptions.PRT must be one line"),
    ],
)
def test_a_label_or_unit_that_is_not_one_short_line_is_refused(extra: dict[str, Any], problem: str) -> None:
    _, errors = parse_params(
        [{"name": "limit", "type": "number", **extra}], where="userParams", allow_defaults=True
    )
    assert any(e.startswith(problem) for e in errors), errors
