"""One logging set-up for the API and the worker: JSON lines for a log collector, or text for a
person (``MANDATUM_LOG_FORMAT``; JSON in production, text elsewhere).

Every line carries what the context knows: the request id (``x_request_id``, from
``core.observe.context``) and, inside an activity or a workflow, its workflow id (and the
activity's type and attempt). Extra fields given to a call (``log.info(..., extra={...})``) become
fields of the JSON object, or ``key=value`` pairs of the text line.

Nothing a caller or an attacker sends can forge or split a line: JSON escapes every control
character (and, ASCII-only, every other character), and the text format escapes C0/C1 controls,
DEL, the line separators and the bidirectional controls (``core.text.UNSAFE_RE``) as ``\\uXXXX``;
a traceback's lines are indented under the line they belong to.

Levels: ``MANDATUM_LOG_LEVEL`` is the level of our loggers (``mandatum.*``); libraries log INFO and
up, and those in ``QUIET`` WARNING and up whatever the level, because their lower lines carry what
must never be logged: SQLAlchemy's SQL parameters and result rows (contacts, hashes), httpx's full
URLs (a webhook receiver's token in its query), python-multipart's form fields (a code, a page
session). uvicorn's own access log is turned off: ``api.telemetry`` writes one line per request.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import IO, Any

from temporalio import activity, workflow

from core.observe.context import current_request_id
from core.text import escaped

QUIET = ("sqlalchemy", "httpx", "httpcore", "python_multipart", "multipart", "hpack", "urllib3")
# LogRecord's own attributes: anything else on a record is an extra field of the call
_STANDARD = set(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}
# extras of other libraries that only repeat what the line says (uvicorn's colored copy of the
# message, the Temporal SDK's info objects: our filter adds the ids they hold)
_IGNORED = {"color_message", "temporal_activity", "temporal_workflow", "activity_info", "workflow_info"}
_HANDLER_MARK = "_mandatum_handler"


class ContextFilter(logging.Filter):
    """Adds the request id and, in an activity or a workflow, where the line comes from."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "x_request_id", None) is None:
            found = current_request_id()
            if found is not None:
                record.x_request_id = found
        if getattr(record, "workflow_id", None) is None:
            if activity.in_activity():
                info = activity.info()
                record.workflow_id = info.workflow_id
                record.activity = info.activity_type
                record.attempt = info.attempt
            elif workflow.in_workflow():
                record.workflow_id = workflow.info().workflow_id
        return True


def fields_of(record: logging.LogRecord) -> dict[str, Any]:
    """The extra fields of a record (the call's ``extra`` and what ``ContextFilter`` added)."""
    return {
        key: value
        for key, value in vars(record).items()
        if key not in _STANDARD and key not in _IGNORED and not key.startswith("_")
    }


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


class JsonFormatter(logging.Formatter):
    """One JSON object a line: ``ts``, ``level``, ``logger``, ``message``, the extra fields, and
    ``exception`` with the traceback when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds")[:-6] + "Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in fields_of(record).items():
            doc.setdefault(key, _plain(value))
        if record.exc_info:
            doc["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            doc["exception"] = record.exc_text
        if record.stack_info:
            doc["stack"] = self.formatStack(record.stack_info)
        return json.dumps(doc, ensure_ascii=True, separators=(",", ":"), default=str)


def _pair(key: str, value: Any) -> str:
    shown = escaped(value if isinstance(value, str) else json.dumps(_plain(value), ensure_ascii=False))
    if not shown or any(ch in shown for ch in ' ="'):
        shown = json.dumps(shown, ensure_ascii=False)
    return f"{escaped(key)}={shown}"


class TextFormatter(logging.Formatter):
    """``12:00:00.123 INFO  logger: message key=value ...``, one line (a traceback indented
    below it)."""

    def format(self, record: logging.LogRecord) -> str:
        moment = datetime.fromtimestamp(record.created).strftime("%H:%M:%S.%f")[:-3]
        line = f"{moment} {record.levelname:<7} {record.name}: {escaped(record.getMessage())}"
        pairs = [_pair(key, value) for key, value in fields_of(record).items()]
        if pairs:
            line += "  " + " ".join(pairs)
        trace = ""
        if record.exc_info:
            trace = self.formatException(record.exc_info)
        elif record.exc_text:
            trace = record.exc_text
        if record.stack_info:
            trace = f"{trace}\n{self.formatStack(record.stack_info)}".strip("\n")
        if trace:
            line += "".join(f"\n    {escaped(part)}" for part in trace.splitlines())
        return line


def configure_logging(fmt: str, level: str, stream: IO[str] | None = None) -> logging.Handler:
    """Log the whole process through one handler on the root logger (replacing what was there, as
    ``logging.basicConfig(force=True)`` would); returns that handler."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter() if fmt == "json" else TextFormatter())
    handler.addFilter(ContextFilter())
    setattr(handler, _HANDLER_MARK, True)
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
        if getattr(old, _HANDLER_MARK, False):
            old.close()
    root.addHandler(handler)
    ours = logging.getLevelName(level.upper())
    root.setLevel(max(ours, logging.INFO))
    logging.getLogger("mandatum").setLevel(ours)
    for name in QUIET:
        logging.getLogger(name).setLevel(max(ours, logging.WARNING))
    for name in ("uvicorn", "uvicorn.error"):  # through our handler, in our format
        uvicorn_logger = logging.getLogger(name)
        uvicorn_logger.handlers.clear()
        uvicorn_logger.propagate = True
    access = logging.getLogger("uvicorn.access")  # api.telemetry logs each request
    access.handlers.clear()
    access.propagate = False
    access.disabled = True
    return handler
