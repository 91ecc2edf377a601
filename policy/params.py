"""Action params: the declared, typed values of an action (CONTRACT section 6).

`executionParams` are supplied by the agent at verify time, `userParams` are pinned by the subject at
decision time (and may have defaults). Values arrive as JSON, so every check here is over JSON types.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

PARAM_TYPES = ("string", "number", "integer", "boolean", "timestamp", "array<string>", "array<number>")
NAME_RE = re.compile(r"^[a-zA-Z_][a-zA-Z0-9_]*$")

# RFC 3339 section 5.6 date-time: a full date, "T", a full time and a mandatory offset.
TIMESTAMP_RE = re.compile(
    r"^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])[Tt]([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?"
    r"([Zz]|[+-]([01]\d|2[0-3]):[0-5]\d)$"
)

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

# Size bounds (issue 30): every string and array a rule reads has a maximum size, so the cost of a
# rule can be bounded before it runs (policy.cost). An action declares them per param (``maxLength``
# for a string or each item of an array<string>, ``maxItems`` for an array); omitted, the default
# applies. The ceilings are the most a declaration may ask for. A timestamp is at most 64 characters.
DEFAULT_MAX_LENGTH, MAX_LENGTH_CEILING = 1_000, 10_000
DEFAULT_MAX_ITEMS, MAX_ITEMS_CEILING = 100, 10_000
MAX_TIMESTAMP_LENGTH = 64
_STRINGS = ("string", "array<string>")
_ARRAYS = ("array<string>", "array<number>")

_PARAM_KEYS = {
    "name",
    "type",
    "description",
    "default",
    "maxLength",
    "maxItems",
    "label",
    "unit",
    "descriptions",
}
# what a person reads of a param (issue 34): its label and description per language of the pages
# (a language missing falls back to ENG, then to a label made from the name), and its unit
TEXT_LANGUAGES = ("ENG", "PRT", "SPA", "FRA")
MAX_LABEL_LENGTH, MAX_UNIT_LENGTH, MAX_DESCRIPTION_LENGTH = 100, 16, 1_000


@dataclass(frozen=True)
class Param:
    name: str
    type: str
    description: str | None = None
    default: Any = None
    has_default: bool = False
    max_length: int | None = None  # as declared; ``length_limit`` is what applies
    max_items: int | None = None
    label: dict[str, str] | None = None  # by language (TEXT_LANGUAGES); None: made from the name
    unit: str | None = None  # written after the value ("120 EUR")
    descriptions: dict[str, str] | None = None  # the description in other languages

    def label_in(self, language: str) -> str:
        """What a person reads as the param's name: its label in ``language``, else in ENG, else
        the name made readable (``weeklyLimit`` reads "Weekly limit"), never the raw name."""
        found = self.label or {}
        return found.get(language) or found.get("ENG") or readable(self.name)

    def description_in(self, language: str) -> str | None:
        found = self.descriptions or {}
        return found.get(language) or self.description

    @property
    def length_limit(self) -> int | None:
        """The most characters a string (or each item of an array<string>) may have; None when the
        type has no strings but timestamps, which ``check_value`` bounds on its own."""
        if self.type not in _STRINGS:
            return None
        return self.max_length if self.max_length is not None else DEFAULT_MAX_LENGTH

    @property
    def items_limit(self) -> int | None:
        """The most items an array may have; None for a scalar type."""
        if self.type not in _ARRAYS:
            return None
        return self.max_items if self.max_items is not None else DEFAULT_MAX_ITEMS

    def as_json(self) -> dict[str, Any]:
        """The declared form: a bound that was not declared is left out (the default applies), so
        the content, and the digestSRI, of a version published before bounds existed is unchanged."""
        out: dict[str, Any] = {"name": self.name, "type": self.type}
        if self.description is not None:
            out["description"] = self.description
        if self.has_default:
            out["default"] = self.default
        if self.max_length is not None:
            out["maxLength"] = self.max_length
        if self.max_items is not None:
            out["maxItems"] = self.max_items
        if self.label is not None:
            out["label"] = dict(self.label)
        if self.unit is not None:
            out["unit"] = self.unit
        if self.descriptions is not None:
            out["descriptions"] = dict(self.descriptions)
        return out


def readable(name: str) -> str:
    """A param's name as words: ``weeklyLimit`` and ``weekly_limit`` read "Weekly limit"."""
    words = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name).replace("_", " ").split()
    text = " ".join(w if sum(c.isupper() for c in w) > 1 else w.lower() for w in words)  # IBANs stays
    return text[:1].upper() + text[1:]


def _one_line(text: str) -> bool:
    return not any(
        ord(c) < 32 or 0x7F <= ord(c) < 0xA0 or 0x2028 <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069
        for c in text
    )


def _texts_by_language(value: Any, place: str, limit: int, errors: list[str]) -> dict[str, str] | None:
    """A text per language: one string (it is ENG's) or ``{ENG: ..., PRT: ...}``; each on one
    line, 1 to ``limit`` characters."""
    if value is None:
        return None
    found = {"ENG": value} if isinstance(value, str) else value
    if not isinstance(found, dict) or not found:
        errors.append(f"{place} must be a string or an object of {', '.join(TEXT_LANGUAGES)} to strings")
        return None
    for language, text in found.items():
        if language not in TEXT_LANGUAGES:
            errors.append(f"{place}.{language} is not one of {', '.join(TEXT_LANGUAGES)}")
        elif not isinstance(text, str) or not 1 <= len(text) <= limit or not _one_line(text):
            errors.append(f"{place}.{language} must be one line of 1 to {limit} characters")
    return {str(k): str(v) for k, v in found.items()}


def read_timestamp(value: str) -> datetime | None:
    """An aware datetime for an RFC 3339 date-time with a time zone, else None; the moment may lie
    outside the datetime range once in UTC (``parse_timestamp`` refuses that)."""
    if not TIMESTAMP_RE.match(value):
        return None
    text = value.upper()
    if "." in text:
        # Python keeps microseconds; RFC 3339 allows any number of fraction digits.
        head, rest = text.split(".", 1)
        digits = re.match(r"\d+", rest)
        assert digits is not None
        text = head + "." + digits.group(0)[:6].ljust(6, "0") + rest[digits.end() :]
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None  # e.g. February 30


def in_range(moment: datetime) -> bool:
    """Whether the moment is one the datetime range holds in UTC (9999-12-31T23:59:59-14:00 is not)."""
    try:
        moment.astimezone(UTC)
    except OverflowError:
        return False
    return True


def parse_timestamp(value: str) -> datetime | None:
    """An aware datetime for an RFC 3339 date-time with a time zone whose moment the datetime range
    holds in UTC, else None."""
    parsed = read_timestamp(value)
    return parsed if parsed is not None and in_range(parsed) else None


OUT_OF_RANGE = "is out of range: in UTC it must fall between 0001-01-01 and 9999-12-31"


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _is_integer(value: Any) -> bool:
    if isinstance(value, bool):
        return False
    # JSON does not tell 5 from 5.0 (JCS writes both as 5), so an integral float is an integer.
    if isinstance(value, float):
        if not (math.isfinite(value) and value.is_integer()):
            return False
        value = int(value)
    return isinstance(value, int) and INT64_MIN <= value <= INT64_MAX


_EXPECTED = {
    "string": "must be a string",
    "number": "must be a number",
    "integer": "must be an integer (64-bit)",
    "boolean": "must be a boolean",
    "timestamp": "must be an RFC 3339 timestamp with a time zone (e.g. 2025-01-31T12:00:00Z)",
    "array<string>": "must be an array of strings",
    "array<number>": "must be an array of numbers",
}


def _scalar_ok(type_: str, value: Any) -> bool:
    if type_ == "string":
        return isinstance(value, str)
    if type_ == "number":
        return _is_number(value)
    if type_ == "integer":
        return _is_integer(value)
    if type_ == "boolean":
        return isinstance(value, bool)
    if type_ == "timestamp":
        return isinstance(value, str) and parse_timestamp(value) is not None
    return False


def check_value(param: Param, value: Any) -> str | None:
    """None when `value` has the param's type and fits its size bounds, else a phrase such as
    "must be a number" or "has 101 items, more than its maxItems of 100".

    Callers prefix the place ("executionParams.amount must be a number").
    """
    type_ = param.type
    if type_.startswith("array<"):
        item_type = type_[len("array<") : -1]
        if not isinstance(value, list):
            return _EXPECTED[type_]
        limit = param.items_limit
        if limit is not None and len(value) > limit:
            return f"has {len(value):,} items, more than its maxItems of {limit:,}"
        for i, item in enumerate(value):
            if not _scalar_ok(item_type, item):
                return f"{_EXPECTED[type_]} (item {i} is not)"
            too_long = _too_long(param, item)
            if too_long:
                return f"item {i} {too_long}"
        return None
    if type_ not in _EXPECTED:
        return f"has an unknown type {type_!r}"
    if type_ == "timestamp" and isinstance(value, str):
        if len(value) > MAX_TIMESTAMP_LENGTH:
            return f"is longer than {MAX_TIMESTAMP_LENGTH} characters: {_EXPECTED[type_]}"
        moment = read_timestamp(value)
        if moment is not None and not in_range(moment):
            return OUT_OF_RANGE
    if not _scalar_ok(type_, value):
        return _EXPECTED[type_]
    return _too_long(param, value)


def _too_long(param: Param, value: Any) -> str | None:
    limit = param.length_limit
    if limit is None or not isinstance(value, str) or len(value) <= limit:
        return None
    return f"is {len(value):,} characters long, more than its maxLength of {limit:,}"


def _bound(item: dict[str, Any], key: str, type_: Any, place: str, errors: list[str]) -> int | None:
    """A declared ``maxLength`` or ``maxItems``: a whole number from 1 to its ceiling, on a type
    that has strings (maxLength) or is an array (maxItems)."""
    if key not in item:
        return None
    value = item[key]
    applies, ceiling = (_STRINGS, MAX_LENGTH_CEILING) if key == "maxLength" else (_ARRAYS, MAX_ITEMS_CEILING)
    if type_ in PARAM_TYPES and type_ not in applies:
        errors.append(f"{place}.{key} applies only to {' and '.join(applies)} params")
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= ceiling:
        errors.append(f"{place}.{key} must be a whole number from 1 to {ceiling:,}")
        return None
    return value


def normalize_value(param: Param, value: Any) -> Any:
    """The canonical JSON form of a valid value (an integral float declared integer becomes an int)."""
    if param.type == "integer" and isinstance(value, float):
        return int(value)
    if isinstance(value, list):
        return list(value)
    return value


def _reading(
    item: dict[str, Any], place: str, errors: list[str]
) -> tuple[dict[str, str] | None, str | None, dict[str, str] | None]:
    """What a person reads of a param: its label and descriptions by language, its unit."""
    label = _texts_by_language(item.get("label"), f"{place}.label", MAX_LABEL_LENGTH, errors)
    descriptions = _texts_by_language(
        item.get("descriptions"), f"{place}.descriptions", MAX_DESCRIPTION_LENGTH, errors
    )
    unit: Any = item.get("unit")
    if unit is not None and (
        not isinstance(unit, str) or not 1 <= len(unit) <= MAX_UNIT_LENGTH or not _one_line(unit)
    ):
        errors.append(f"{place}.unit must be one line of 1 to {MAX_UNIT_LENGTH} characters")
        unit = None
    return label, unit, descriptions


def parse_params(raw: Any, *, where: str, allow_defaults: bool) -> tuple[list[Param], list[str]]:
    """Params from their JSON form `[{name, type, description?, default?}]`, with readable errors."""
    if raw is None:
        return [], []
    if not isinstance(raw, list):
        return [], [f"{where} must be an array"]
    params: list[Param] = []
    errors: list[str] = []
    seen: set[str] = set()
    for i, item in enumerate(raw):
        place = f"{where}.{i}"
        if not isinstance(item, dict):
            errors.append(f"{place} must be an object with name and type")
            continue
        item_errors = [f"{place}.{key} is not a known field" for key in sorted(set(item) - _PARAM_KEYS)]
        name: Any = item.get("name")
        type_: Any = item.get("type")
        description: Any = item.get("description")
        if not isinstance(name, str) or not NAME_RE.match(name):
            item_errors.append(f"{place}.name must match {NAME_RE.pattern}")
        elif name in seen:
            item_errors.append(f"{place}.name {name!r} is declared twice")
        if type_ not in PARAM_TYPES:
            item_errors.append(f"{place}.type must be one of {', '.join(PARAM_TYPES)}")
        if description is not None and not isinstance(description, str):
            item_errors.append(f"{place}.description must be a string")
        has_default = "default" in item
        if has_default and not allow_defaults:
            item_errors.append(f"{place}.default is not allowed here (only userParams have defaults)")
        max_length = _bound(item, "maxLength", type_, place, item_errors)
        max_items = _bound(item, "maxItems", type_, place, item_errors)
        label, unit, descriptions = _reading(item, place, item_errors)
        if item_errors:
            errors.extend(item_errors)
            continue
        param = Param(
            name=name,
            type=type_,
            description=description,
            max_length=max_length,
            max_items=max_items,
            label=label,
            unit=unit,
            descriptions=descriptions,
        )
        if has_default:
            problem = check_value(param, item["default"])
            if problem:
                errors.append(f"{place}.default {problem}")
                continue
            param = replace(param, default=normalize_value(param, item["default"]), has_default=True)
        seen.add(name)
        params.append(param)
    return params, errors


def validate_values(
    declared: list[Param], values: Any, *, where: str, fill_defaults: bool
) -> tuple[dict[str, Any], list[str]]:
    """Check named values against the declared params: exactly the declared names, each of its type.

    A missing name is an error unless `fill_defaults` and the param has a default, which is then used.
    Returns the values in declared order (normalized) and the errors; absent `values` means `{}`.
    """
    if values is None:
        values = {}
    if not isinstance(values, dict):
        return {}, [f"{where} must be an object"]
    errors: list[str] = []
    out: dict[str, Any] = {}
    names = {p.name for p in declared}
    for param in declared:
        if param.name not in values:
            if fill_defaults and param.has_default:
                out[param.name] = normalize_value(param, param.default)
            else:
                errors.append(f"{where}.{param.name} is missing")
            continue
        problem = check_value(param, values[param.name])
        if problem:
            errors.append(f"{where}.{param.name} {problem}")
        else:
            out[param.name] = normalize_value(param, values[param.name])
    extras = [extra for extra in values if extra not in names]
    for extra in extras[:MAX_REPORTED]:
        shown = (
            extra
            if len(extra) <= 64 and NAME_RE.match(extra)
            else repr(extra[:64]) + "..." * (len(extra) > 64)
        )
        errors.append(f"{where}.{shown} is not declared")
    if len(extras) > MAX_REPORTED:
        errors.append(f"{where} has {len(extras) - MAX_REPORTED:,} more names that are not declared")
    return out, errors


MAX_REPORTED = 10  # undeclared names named one by one; the rest are counted
