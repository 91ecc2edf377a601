"""core.ids: CONTRACT section 3 identifiers (ObjectIds, URNs, subject UUIDs)."""

from __future__ import annotations

import itertools
import re
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from core import ids

UUID4_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}")


def test_object_id_shape_and_timestamp() -> None:
    before = int(time.time())
    value = ids.new_object_id()
    after = int(time.time())
    assert re.fullmatch(r"[0-9a-f]{24}", value), value
    assert ids.is_object_id(value)
    assert before <= int(value[:8], 16) <= after


def test_object_id_with_a_given_time() -> None:
    value = ids.new_object_id(now=1_700_000_000.9)
    assert bytes.fromhex(value)[:4] == (1_700_000_000).to_bytes(4, "big")
    assert int(value[:8], 16) == 1_700_000_000


def test_object_ids_are_unique_and_increasing_within_a_second() -> None:
    values = [ids.new_object_id() for _ in range(10_000)]
    assert len(set(values)) == 10_000
    assert all(ids.is_object_id(v) for v in values)
    # one process: the same 5 random bytes, a 3-byte counter that moves by one
    assert len({v[8:18] for v in values}) == 1
    counters = [int(v[18:], 16) for v in values]
    assert all((b - a) % 0x1000000 == 1 for a, b in itertools.pairwise(counters))


def test_object_ids_are_unique_across_threads() -> None:
    out: list[str] = []
    lock = threading.Lock()

    def make() -> None:
        batch = [ids.new_object_id() for _ in range(2_000)]
        with lock:
            out.extend(batch)

    threads = [threading.Thread(target=make) for _ in range(5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(set(out)) == 10_000


def test_object_ids_differ_between_processes() -> None:
    code = "from core.ids import new_object_id; print(new_object_id())"
    root = Path(__file__).resolve().parents[2]
    outs = {
        subprocess.run(
            [sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True
        ).stdout.strip()
        for _ in range(2)
    }
    assert len(outs) == 2
    assert len({o[8:18] for o in outs}) == 2  # a fresh random part per process


@pytest.mark.parametrize(
    "value",
    ["", "0" * 23, "0" * 25, "A" * 24, "g" * 24, " " + "0" * 23, "0" * 24 + "\n", "urn:via:credential:x"],
)
def test_is_object_id_refuses(value: str) -> None:
    assert not ids.is_object_id(value)


@pytest.mark.parametrize(
    "kind", ["credential", "action", "action-version", "decision", "receipt", "presentation", "event"]
)
def test_urn_format(kind: str) -> None:
    value = ids.urn(kind)
    prefix = f"urn:via:{kind}:"
    assert value.startswith(prefix)
    rest = value[len(prefix) :]
    assert UUID4_RE.fullmatch(rest), value
    assert uuid.UUID(rest).version == 4
    assert ids.urn(kind) != value


def test_subject_uuid_is_v4() -> None:
    value = ids.new_subject_uuid()
    assert UUID4_RE.fullmatch(value) and uuid.UUID(value).version == 4
