"""wire.json_depth: the depth of a JSON text without parsing it, checked against the parsed value's
depth on generated texts (strings full of brackets, quotes and escapes), at and around the limit."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from tests.support.json_depth import depth
from wire.json_depth import STRING_RE, json_depth_exceeds, without_strings

PIECES = ["[", "]", "{", "}", '"', "\\", "a", "é", "\\u005b", " ", ":", ","]


def text(rng: random.Random) -> str:
    return "".join(rng.choice(PIECES) for _ in range(rng.randrange(6)))


def generated(rng: random.Random, levels: int) -> Any:
    """A value ``levels`` deep on one branch, with strings and shallower siblings on the way."""
    if levels == 0:
        return rng.choice([text(rng), 1, None, True])
    inner = generated(rng, levels - 1)
    siblings = [text(rng) for _ in range(rng.randrange(3))]
    if rng.random() < 0.5:
        return [*siblings, inner]
    return {text(rng) or "k": inner, **{f"s{i}{s}": s for i, s in enumerate(siblings)}}


@pytest.mark.parametrize("ascii_only", [True, False])
def test_the_depth_is_the_parsed_values_at_and_around_the_limit(ascii_only: bool) -> None:
    rng = random.Random(32)
    seen = {True: 0, False: 0}
    for _ in range(600):
        value = generated(rng, rng.randrange(1, 12))
        body = json.dumps(value, ensure_ascii=ascii_only).encode()
        levels = depth(value)
        for limit in (levels - 1, levels, levels + 1):
            assert json_depth_exceeds(body, limit) is (levels > limit), body
            seen[levels > limit] += 1
    assert seen[True] > 500 and seen[False] > 500


def test_both_ways_of_dropping_strings_agree_on_texts_without_escapes() -> None:
    rng = random.Random(8259)
    without_escapes = 0
    for _ in range(2000):
        body = json.dumps(generated(rng, rng.randrange(1, 8)), ensure_ascii=False).encode()
        if b"\\" in body:
            continue
        without_escapes += 1
        assert without_strings(body) == STRING_RE.sub(b"", body) == b"".join(body.split(b'"')[::2])
    assert without_escapes > 200


@pytest.mark.parametrize(
    ("body", "exceeds"),
    [
        (b'["' + b"[" * 40 + b'"]', False),  # brackets in a string
        (b'["\\"' + b"[" * 40 + b'"]', False),  # after an escaped quote, still in the string
        (b"[" * 33 + b"]" * 33, True),
        (b"[" * 32 + b"]" * 32, False),
        (b"[" * 33 + b'"', True),  # the opening run counts: the quote never closes
        (b'"' + b"[" * 40, False),  # a string that never ends: nothing after it is JSON
        (b'{"a": "x", "b": ' + b"[" * 33 + b"]" * 33 + b"}", True),
    ],
)
def test_edges(body: bytes, exceeds: bool) -> None:
    assert json_depth_exceeds(body, 32) is exceeds


@pytest.mark.parametrize(
    ("body", "exceeds"),
    [
        (b'"' * 2**20, False),  # a million empty strings' quotes: split into a million pieces
        (b'["a"' + b',"a"' * 200_000 + b"]", False),
        (b"[" * 2**20, True),
        (b'["\\""' + b',"\\""' * 150_000 + b"]", False),  # escapes: the expression's way, as large
    ],
)
def test_bodies_at_the_size_limit_are_measured(body: bytes, exceeds: bool) -> None:
    """The largest bodies the API reads (1 MiB, ``max_body_bytes``), built to make dropping strings
    as costly as it can be, get their answer (68 ms for the quotes, against 941 ms by the
    expression alone, measured once)."""
    assert json_depth_exceeds(body) is exceeds
