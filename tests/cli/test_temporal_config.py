"""Temporal's dynamic configuration: the dev server (``make run``, the tests, the benchmarks) and the
scaled shape (docker-compose.yml) are given the same values, under names the server knows."""

from __future__ import annotations

import mmap
from pathlib import Path

import yaml

from cli.stack import BIN, TEMPORAL_DYNAMIC_CONFIG, dynamic_config_args, temporal_command
from core.settings import Settings

PROJECT = Path(__file__).resolve().parents[2]


def test_the_dev_server_is_started_with_the_dynamic_config(tmp_path: Path) -> None:
    command = temporal_command(Settings(var_dir=tmp_path))
    given = [command[i + 1] for i, arg in enumerate(command) if arg == "--dynamic-config-value"]
    assert given == [f"{key}={value}" for key, value in TEMPORAL_DYNAMIC_CONFIG.items()]
    assert given and dynamic_config_args()[1::2] == given
    assert TEMPORAL_DYNAMIC_CONFIG["history.transferProcessorMaxPollRPS"] > 20  # the server's default


def test_the_compose_files_temporal_has_the_same_values() -> None:
    compose = yaml.safe_load((PROJECT / "docker-compose.yml").read_text())
    config = yaml.safe_load(compose["configs"]["temporal-dynamic-config"]["content"])
    for key, value in TEMPORAL_DYNAMIC_CONFIG.items():
        assert config.get(key) == [{"value": value}], key


def test_every_key_is_one_the_server_knows() -> None:
    """A misspelt key is ignored by the server without a word; its binary holds every key it reads."""
    with (BIN / "temporal").open("rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as binary:
        for key in TEMPORAL_DYNAMIC_CONFIG:
            assert binary.find(key.encode()) >= 0, key
        assert binary.find(b"history.transferProcessorMaxPollRPs") < 0  # the check can fail
