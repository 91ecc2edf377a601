"""Logs, metrics and traces of every process (docs/architecture.md, "Logs, metrics and traces").

- ``context``: the request id of what is being done (``X-Request-Id``), in a context variable.
- ``logs``: one logging set-up for the API and the worker, JSON lines or text for a person.
- ``metrics``: the process's Prometheus registry, every metric the service exports, its server.
- ``events``: the business events, each defined once: one call logs its line and moves its metric.
- ``temporal``: the interceptors that carry the request id into workflows and activities.
- ``tracing``: OpenTelemetry, set up only when an OTLP endpoint is configured.

It imports nothing of the project but ``core`` (a leaf like the rest of ``core``), so every layer
may use it.
"""
