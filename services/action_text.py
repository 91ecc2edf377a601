"""The texts of an action version people read or its digest covers, held to ``core.text``'s rule
wherever a spec enters (the command line's spec file, the dashboard's editor, publishing a draft
stored before the rule): the name, each rule's name and each limit's unit on one line; the
descriptions and the rule expressions may break lines but hold no other control character and no
bidi control (a reordered expression could read as another rule than the one that runs); a
userParam's default, which the subject reads as the value being approved when the request leaves
it out, on one line like every userParams string (``wire.models.one_line_strings``)."""

from __future__ import annotations

from collections.abc import Iterator

from core.text import strings_in, text_problem
from policy.actions import ActionSpec


def _texts(spec: ActionSpec) -> Iterator[tuple[str, str, bool]]:
    """(where, text, may it break lines) for every text of ``spec``, ``where`` as the publish
    checks name places (``userParams.0.description``, ``rules.2.name``)."""
    yield "name", spec.name, False
    if spec.description is not None:
        yield "description", spec.description, True
    for part, params in (("executionParams", spec.execution_params), ("userParams", spec.user_params)):
        for index, param in enumerate(params):
            if param.description is not None:
                yield f"{part}.{index}.description", param.description, True
            for language, text in (param.label or {}).items():
                yield f"{part}.{index}.label.{language}", text, False
            for language, text in (param.descriptions or {}).items():
                yield f"{part}.{index}.descriptions.{language}", text, False
            if param.unit is not None:
                yield f"{part}.{index}.unit", param.unit, False
            for path, text in strings_in(param.default):
                yield f"{part}.{index}.default" + (f".{path}" if path else ""), text, False
    for index, rule in enumerate(spec.rules):
        yield f"rules.{index}.name", rule.name, False
        if rule.description is not None:
            yield f"rules.{index}.description", rule.description, True
        yield f"rules.{index}.expression", rule.expression, True
    for index, limit in enumerate(spec.limits):
        if limit.unit is not None:
            yield f"limits.{index}.unit", limit.unit, False
        if limit.description is not None:
            yield f"limits.{index}.description", limit.description, True


def text_problems(spec: ActionSpec) -> list[str]:
    """A message per text of ``spec`` that ``core.text`` refuses, naming its place."""
    return [
        f"{where} {problem}"
        for where, text, multiline in _texts(spec)
        if (problem := text_problem(text, multiline=multiline)) is not None
    ]
