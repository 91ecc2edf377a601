"""Every metric the service exports, in one registry per process, and the server of ``/metrics``.

The API serves them on ``MANDATUM_API_METRICS_PORT`` and the worker on
``MANDATUM_WORKER_METRICS_PORT``, never on the public API's port. Every label takes values from a
closed set the code chooses (a route's template, never its path; a method outside the usual ones is
``OTHER``; a refusal's kind), so no caller can grow a label set.

Several processes behind one port (uvicorn ``--workers N``): with ``PROMETHEUS_MULTIPROC_DIR`` set
(to an empty directory, before the processes start), prometheus-client keeps every process's values
in files there and the one process that binds the port serves the sum of them all; the others
carry on without a server (``serve``).

Business metrics are moved by ``core.observe.events`` only, so a metric and its log line cannot
disagree. The names of the Temporal SDK's own metrics, which the worker exports through the SDK's
exporter (``worker_sdk_metrics_port``), are those of ``SDK_METRICS`` with the prefix ``temporal_``.
"""

from __future__ import annotations

import errno
import logging
import os
from dataclasses import dataclass
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram
from prometheus_client import multiprocess as prometheus_multiprocess
from prometheus_client.exposition import start_http_server
from prometheus_client.platform_collector import PlatformCollector
from prometheus_client.process_collector import ProcessCollector

log = logging.getLogger("mandatum.metrics")
REGISTRY = CollectorRegistry(auto_describe=True)
ProcessCollector(registry=REGISTRY)  # process_cpu_seconds_total, process_resident_memory_bytes, ...
PlatformCollector(registry=REGISTRY)
METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
UNMATCHED = "unmatched"  # the route label of a path no route matches
TEMPORAL_PREFIX = "temporal_"
# the Temporal SDK's metrics the alert rules use (sdk-core's names; the exporter adds the prefix,
# ``_seconds`` to durations and ``_total`` to counters, as worker.temporal_runtime configures it)
SDK_METRICS = (
    "worker_task_slots_available",
    "activity_schedule_to_start_latency",
    "workflow_task_schedule_to_start_latency",
    "activity_execution_failed",
    "request_failure",
    "long_request_failure",
)

_LATENCY = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)

HTTP_REQUESTS = Counter(
    "mandatum_http_requests",
    "HTTP requests answered, by method, route template and status",
    ["method", "route", "status"],
    registry=REGISTRY,
)
HTTP_DURATION = Histogram(
    "mandatum_http_request_duration_seconds",
    "Time to answer an HTTP request, by method and route template",
    ["method", "route"],
    buckets=_LATENCY,
    registry=REGISTRY,
)
VERIFICATIONS = Counter(
    "mandatum_verifications",
    "POST /credential/verify decisions, by decision and refusal reason (none for allow)",
    ["decision", "reason"],
    registry=REGISTRY,
)
REQUEST_OUTCOMES = Counter(
    "mandatum_request_outcomes",
    "Credential requests closed, by outcome (completed, canceled, expired)",
    ["outcome"],
    registry=REGISTRY,
)
CODES_SENT = Counter(
    "mandatum_codes_sent", "One-time codes handed to a transport, by channel", ["channel"], registry=REGISTRY
)
CODES_FAILED = Counter(
    "mandatum_codes_failed",
    "One-time code sends that did not reach the subject, by channel and reason (UNDELIVERABLE, "
    "INVALID_PHONE_NUMBER: for good; transient: this attempt failed and is retried)",
    ["channel", "reason"],
    registry=REGISTRY,
)
DECISIONS = Counter(
    "mandatum_decisions", "Subjects' decisions recorded, by decision", ["decision"], registry=REGISTRY
)
MANDATES_ISSUED = Counter("mandatum_mandates_issued", "Credentials issued (signed)", registry=REGISTRY)
WEBHOOK_DELIVERIES = Counter(
    "mandatum_webhook_deliveries",
    "Webhook delivery outcomes, by result (delivered; retrying: an attempt failed; failed: given up; "
    "skipped: no webhook configured)",
    ["result"],
    registry=REGISTRY,
)
WEBHOOK_LATENCY = Histogram(
    "mandatum_webhook_delivery_latency_seconds",
    "From a webhook event's creation to its first successful delivery",
    buckets=(0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 300.0, 900.0, 3600.0, 21600.0, 86400.0),
    registry=REGISTRY,
)
AUDIT_APPEND = Histogram(
    "mandatum_audit_append_seconds",
    "Time to append one audit record (chain head, signature, insert) inside its transaction",
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0),
    registry=REGISTRY,
)


def method_label(method: str) -> str:
    return method if method in METHODS else "OTHER"


def exported_names() -> set[str]:
    """Every sample name this process's registry exposes, also of a labelled metric that has no
    sample yet: a counter's ``_total``, a histogram's ``_bucket``, ``_sum`` and ``_count``."""
    suffixes = {"counter": ("_total",), "histogram": ("_bucket", "_sum", "_count")}
    names: set[str] = set()
    for family in REGISTRY.collect():
        names |= {sample.name for sample in family.samples}
        names |= {family.name + suffix for suffix in suffixes.get(family.type, ("",))}
    return names


@dataclass
class MetricsServer:
    """``/metrics`` on a thread of its own (prometheus-client's WSGI server)."""

    server: Any
    thread: Any

    @property
    def port(self) -> int:
        return int(self.server.server_address[1])

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(5)


def _served_registry() -> CollectorRegistry:
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        return REGISTRY
    merged = CollectorRegistry()
    prometheus_multiprocess.MultiProcessCollector(merged)
    return merged


def serve(host: str, port: int | None, what: str) -> MetricsServer | None:
    """Serve ``/metrics`` on ``host:port`` (0: any free port); None when no port is configured, or
    when another process of a multi-process server already serves the shared values."""
    if port is None:
        return None
    try:
        server, thread = start_http_server(port, host, registry=_served_registry())
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE and os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
            log.info("%s metrics on %s:%d are served by another process of this server", what, host, port)
            return None
        raise
    found = MetricsServer(server, thread)
    log.info("%s metrics on http://%s:%d/metrics", what, host, found.port)
    return found
