"""Fixtures of the observability tests: the process's logging as the service sets it up, captured."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from core.observe.logs import QUIET, ContextFilter, TextFormatter, configure_logging

# loggers whose state the fixture changes, so it can put them back
TOUCHED = ("mandatum", "uvicorn", "uvicorn.error", "uvicorn.access", "mail.log", *QUIET)


@dataclass
class Captured:
    """What the process logged: the JSON lines (as the service writes them) and the same records in
    the text format."""

    json_stream: io.StringIO
    text_stream: io.StringIO
    _parsed: list[dict[str, Any]] = field(default_factory=list)

    @property
    def json_text(self) -> str:
        return self.json_stream.getvalue()

    @property
    def text(self) -> str:
        return self.text_stream.getvalue()

    def lines(self) -> list[dict[str, Any]]:
        """Every JSON line so far, parsed (a line that does not parse fails the test)."""
        raw = self.json_text.splitlines()
        for line in raw[len(self._parsed) :]:
            self._parsed.append(json.loads(line))
        return list(self._parsed)

    def events(self, name: str, **fields: Any) -> list[dict[str, Any]]:
        return [
            line
            for line in self.lines()
            if line.get("event") == name and all(line.get(k) == v for k, v in fields.items())
        ]


@pytest.fixture
def captured_logs() -> Iterator[Captured]:
    """``configure_logging`` at DEBUG as a process would run it (JSON), the text format beside it,
    and every other logger at DEBUG too: what the service holds back (``QUIET``) stays held back.
    The test's own SMTP server (aiosmtpd's ``mail.log``) prints the messages it receives, codes
    included, by design: it is not the service, and is held at WARNING here. All put back after."""
    root = logging.getLogger()
    saved_root = (root.level, root.handlers[:])
    saved = {name: logging.getLogger(name) for name in TOUCHED}
    states = {name: (lg.level, lg.handlers[:], lg.propagate, lg.disabled) for name, lg in saved.items()}
    captured = Captured(io.StringIO(), io.StringIO())
    configure_logging("json", "DEBUG", captured.json_stream)
    text = logging.StreamHandler(captured.text_stream)
    text.setFormatter(TextFormatter())
    text.addFilter(ContextFilter())
    root.addHandler(text)
    root.setLevel(logging.DEBUG)
    logging.getLogger("mail.log").setLevel(logging.WARNING)
    try:
        yield captured
    finally:
        for handler in root.handlers[:]:
            root.removeHandler(handler)
        root.setLevel(saved_root[0])
        for handler in saved_root[1]:
            root.addHandler(handler)
        for name, (level, handlers, propagate, disabled) in states.items():
            lg = saved[name]
            lg.setLevel(level)
            lg.handlers[:] = handlers
            lg.propagate, lg.disabled = propagate, disabled
