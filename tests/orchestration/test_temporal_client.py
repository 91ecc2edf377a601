"""The Temporal client every process builds (``orchestration.temporal.build_client``): no gRPC
compression unless the settings ask for gzip, and nothing else accepted."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError
from temporalio.service import GrpcCompression

from core.settings import Settings
from orchestration.temporal import build_client


def settings(tmp_path: Path) -> Settings:
    return Settings(var_dir=tmp_path, temporal_address="127.0.0.1:1")  # lazy: never reached


async def test_the_client_compresses_nothing_by_default(tmp_path: Path) -> None:
    client = await build_client(settings(tmp_path), lazy=True)
    assert client.service_client.config.grpc_compression == GrpcCompression.NONE


async def test_gzip_when_the_settings_ask_for_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MANDATUM_TEMPORAL_GRPC_COMPRESSION", "gzip")
    client = await build_client(settings(tmp_path), lazy=True)
    assert client.service_client.config.grpc_compression == GrpcCompression.GZIP


@pytest.mark.parametrize("value", ["brotli", "GZIP ", "", "deflate"])
def test_another_compression_is_refused_at_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    monkeypatch.setenv("MANDATUM_TEMPORAL_GRPC_COMPRESSION", value)
    with pytest.raises(ValidationError, match="temporal_grpc_compression"):
        Settings(var_dir=tmp_path)
