"""The log formats: one line per record whatever the text holds, the context's ids on it; the
levels a process runs with; the settings that choose them."""

from __future__ import annotations

import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from core.observe.context import request_id_bound
from core.observe.logs import QUIET, ContextFilter, JsonFormatter, TextFormatter, configure_logging
from core.settings import Environment, Settings

FORGED = "done\r\n12:00:00.000 ERROR   mandatum.api: forged\u2028line\u202eevil\x1b[31m"


def record(message: str, *args: object, exc: bool = False, **extra: object) -> logging.LogRecord:
    made = logging.LogRecord("mandatum.test", logging.WARNING, __file__, 1, message, args, None)
    if exc:
        try:
            raise ValueError("boom\nfake line")
        except ValueError:
            made.exc_info = sys.exc_info()
    made.__dict__.update(extra)
    ContextFilter().filter(made)
    return made


def test_json_is_one_line_per_record_with_the_context() -> None:
    with request_id_bound("rid-1"):
        made = record(
            "user said %s", FORGED, exc=True, event="x.y", organization_id="org1", nested={"a": [1]}
        )
    line = JsonFormatter().format(made)
    assert "\n" not in line and "\r" not in line and "\u2028" not in line and "\x1b" not in line
    doc = json.loads(line)
    assert doc["message"] == f"user said {FORGED}"  # escaped, not lost
    assert (doc["x_request_id"], doc["event"], doc["organization_id"], doc["nested"]) == (
        "rid-1",
        "x.y",
        "org1",
        {"a": [1]},
    )
    assert (doc["level"], doc["logger"]) == ("WARNING", "mandatum.test") and doc["ts"].endswith("Z")
    assert "ValueError: boom" in doc["exception"]


def test_text_escapes_what_could_forge_a_line() -> None:
    with request_id_bound("rid-2"):
        made = record("user said %s", FORGED, exc=True, reason=FORGED)
    text = TextFormatter().format(made)
    first, *trace = text.split("\n")
    assert "\r" not in text and "\u2028" not in text and "\u202e" not in text and "\x1b" not in text
    assert "done\\u000d\\u000a12:00:00.000 ERROR" in first and "x_request_id=rid-2" in first
    assert trace and all(line.startswith("    ") for line in trace)  # the traceback, under its line
    assert any("fake line" in line for line in trace)


def test_a_bad_request_id_never_reaches_a_line() -> None:
    with request_id_bound("evil\r\nid"):
        made = record("hello")
    assert not hasattr(made, "x_request_id")


@pytest.fixture
def restored() -> object:
    root = logging.getLogger()
    names = ("mandatum", "uvicorn", "uvicorn.error", "uvicorn.access", *QUIET)
    saved = (root.level, root.handlers[:], {n: logging.getLogger(n).__dict__.copy() for n in names})
    yield None
    root.handlers[:] = saved[1]
    root.setLevel(saved[0])
    for name, state in saved[2].items():
        logging.getLogger(name).__dict__.update(state)


def test_levels_of_a_process(restored: object) -> None:
    stream = io.StringIO()
    handler = configure_logging("json", "DEBUG", stream)
    root = logging.getLogger()
    assert root.handlers == [handler] and root.level == logging.INFO
    assert logging.getLogger("mandatum").level == logging.DEBUG
    assert all(logging.getLogger(name).level == logging.WARNING for name in QUIET)
    assert logging.getLogger("uvicorn.access").disabled and logging.getLogger("uvicorn.error").propagate
    logging.getLogger("mandatum.x").debug("ours")
    logging.getLogger("sqlalchemy.engine.Engine").info("INSERT ... ('ana@example.com',)")
    logging.getLogger("httpx").info("HTTP Request: POST https://hooks.example/h?token=t0k3n")
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["ours"]
    configure_logging("text", "WARNING", stream)  # replaces: still one handler
    assert len(root.handlers) == 1 and root.level == logging.WARNING


def test_settings_choose_format_and_level(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base: dict[str, Any] = {"var_dir": tmp_path, "environment": Environment.TEST}
    assert Settings(**base).log_format_resolved == "text"
    assert Settings(**base, log_format="JSON", log_level="debug").log_format_resolved == "json"
    assert Settings(**base, log_level="debug").log_level == "DEBUG"
    monkeypatch.setenv("MANDATUM_API_METRICS_PORT", "")
    monkeypatch.setenv("MANDATUM_WORKER_METRICS_PORT", "9465")
    monkeypatch.setenv("MANDATUM_LOG_FORMAT", "")
    found = Settings(**base)
    assert (found.api_metrics_port, found.worker_metrics_port, found.log_format) == (None, 9465, None)
    with pytest.raises(ValueError):
        Settings(**base, log_level="LOUD")


def test_a_database_error_never_shows_its_parameters() -> None:
    """Such an error reaches the logs with its traceback: its text names the statement only."""
    from sqlalchemy import text

    from store.db import make_engine

    engine = make_engine("sqlite://")
    try:
        with engine.connect() as conn, pytest.raises(Exception) as raised:
            conn.execute(text("SELECT * FROM nowhere WHERE contact = :c"), {"c": "ana@example.com"})
    finally:
        engine.dispose()
    assert "nowhere" in str(raised.value) and "ana@example.com" not in str(raised.value)
