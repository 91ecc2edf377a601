"""OpenTelemetry traces, only when an OTLP endpoint is configured (the standard variables
``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; the exporter reads the
rest of the ``OTEL_EXPORTER_OTLP_*`` variables itself). Without one, nothing of OpenTelemetry's SDK
is imported and nothing is installed: no cost.

With one, each process has a tracer provider exporting spans in batches over OTLP/HTTP; the API's
requests become spans (``api.telemetry``, FastAPI's instrumentation) and the Temporal client and
worker carry them into workflows and activities (``temporalio.contrib.opentelemetry``). The
provider is this module's, not OpenTelemetry's global one, so nothing else in the process starts
tracing by accident.
"""

from __future__ import annotations

import os
from typing import Any

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
_provider: Any = None


def configured() -> bool:
    return any(os.environ.get(name, "").strip() for name in ENDPOINT_VARIABLES)


def setup(service_name: str) -> bool:
    """Export this process's spans when an endpoint is configured; False (nothing done) otherwise.
    ``OTEL_SERVICE_NAME`` overrides ``service_name``."""
    if not configured():
        return False
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    name = os.environ.get("OTEL_SERVICE_NAME", "").strip() or service_name
    provider = TracerProvider(resource=Resource.create({"service.name": name}))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    use_provider(provider)
    return True


def use_provider(provider: Any) -> None:
    """Trace through ``provider`` from now on (None: no tracing). ``setup`` calls it; a test gives
    a provider with an in-memory exporter."""
    global _provider
    _provider = provider


def provider() -> Any:
    """The tracer provider, or None when tracing is off."""
    return _provider


def temporal_interceptors() -> list[Any]:
    """The Temporal interceptor that creates and carries spans (client and worker), when tracing."""
    if _provider is None:
        return []
    from temporalio.contrib.opentelemetry import TracingInterceptor

    return [TracingInterceptor(_provider.get_tracer("mandatum.temporal"))]


def shutdown() -> None:
    """Export what is still buffered (at the process's end)."""
    if _provider is not None:
        _provider.shutdown()
