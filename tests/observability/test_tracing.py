"""Tracing: off without an OTLP endpoint (nothing set up); with a tracer provider, the API's requests
become spans named by route and the Temporal client carries them (``temporalio.contrib``)."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor

from api.app import create_app
from api.telemetry import observed_client
from core.observe import tracing
from core.observe.temporal import RequestIdClientInterceptor
from core.settings import Settings


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracing.use_provider(provider)
    try:
        yield exporter
    finally:
        tracing.use_provider(None)
        provider.shutdown()


def test_off_without_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in tracing.ENDPOINT_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    assert not tracing.setup("mandatum-test") and tracing.provider() is None
    assert tracing.temporal_interceptors() == []
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", " ")
    assert not tracing.configured()


async def test_requests_become_spans_by_route(
    spans: InMemorySpanExporter, settings: Settings, temporal: Client
) -> None:
    app = create_app(settings)
    try:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as http:
            assert (await http.get("/healthz")).status_code == 200
            assert (await http.get("/orgs/6b0250e38402ead89ea995e6/did.json")).status_code in (200, 404)
    finally:
        app.state.ctx.engine.dispose()
    routes = sorted(
        str(span.attributes.get("http.route")) for span in spans.get_finished_spans() if span.attributes
    )
    assert "/healthz" in routes and "/orgs/{org_id}/did.json" in routes, routes
    assert not any("6b0250e38402ead89ea995e6" in route for route in routes)
    kinds = {type(i) for i in observed_client(temporal).config()["interceptors"]}
    assert {RequestIdClientInterceptor, TracingInterceptor} <= kinds


def test_without_tracing_the_client_only_carries_the_request_id(temporal: Client) -> None:
    given = [type(i) for i in temporal.config()["interceptors"]]  # the test environment's own
    kinds = [type(i) for i in observed_client(temporal).config()["interceptors"]]
    assert kinds == [*given, RequestIdClientInterceptor]
