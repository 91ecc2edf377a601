"""The ``mandatum`` command run in-process with typer's ``CliRunner``, as a subprocess would see it.

Each run gets exactly the environment it is given (``os.environ`` is swapped for the call and
restored after), a fresh ``get_settings()``, and the process umask it had before (the command sets
its own, as the real process does). ``os._exit`` becomes ``SystemExit`` for the call, so a command
that leaves that way gives its exit status instead of ending the test run. An exception the
command does not handle shows as the interpreter would show it: a traceback on stderr, status 1.
The one real subprocess run of the installed entry point is ``tests/cli/test_main.py``'s smoke test.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

import pytest
from typer.testing import CliRunner

from core.settings import get_settings

_lock = threading.Lock()  # os.environ and the umask are the process's: one command at a time


def _exit(status: int) -> NoReturn:
    raise SystemExit(status)


def _invoke(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    from cli.main import app  # imported on first use, like the real command's start-up

    with _lock:
        saved_env = dict(os.environ)
        saved_umask = os.umask(0o022)
        os.umask(saved_umask)
        real_exit = os._exit
        os.environ.clear()
        os.environ.update(env)
        get_settings.cache_clear()
        os._exit = _exit
        try:
            result = CliRunner().invoke(app, list(args), prog_name="mandatum", catch_exceptions=True)
        finally:
            os._exit = real_exit
            os.environ.clear()
            os.environ.update(saved_env)
            get_settings.cache_clear()
            os.umask(saved_umask)
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(["mandatum", *args], result.exit_code, result.stdout, stderr)


def run_cli(args: Sequence[str], env: Mapping[str, str]) -> subprocess.CompletedProcess[str]:
    """``mandatum ARGS`` with environment ``env``: (returncode, stdout, stderr) like ``subprocess.run``.

    Called from a coroutine (a running event loop in this thread), the command runs on a thread of
    its own, so the ones that use ``asyncio.run`` (``webhook test``, ``webhook retry``) work too."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return _invoke(args, env)
    box: list[subprocess.CompletedProcess[str] | BaseException] = []

    def target() -> None:
        try:
            box.append(_invoke(args, env))
        except BaseException as exc:
            box.append(exc)

    thread = threading.Thread(target=target, name="mandatum-cli")
    thread.start()
    thread.join(timeout=120)
    assert box, f"mandatum {' '.join(args)} did not finish in 120 s"
    if isinstance(box[0], BaseException):
        raise box[0]
    return box[0]


def operator_shell(
    settings: Any, master_key: str, logname: str, *prefix: str
) -> Callable[..., subprocess.CompletedProcess[str]]:
    """``run(*args)``: ``mandatum *prefix *args`` as operator ``logname`` would run it on the host of
    ``settings`` (its database, master key, var and outbox directories, the test environment)."""
    env = clean_env(
        MANDATUM_DATABASE_URL=settings.sqlalchemy_url,
        MANDATUM_MASTER_KEY=master_key,
        MANDATUM_VAR_DIR=str(settings.var_dir),
        MANDATUM_PUBLIC_URL=settings.public_url,
        MANDATUM_ENVIRONMENT="test",
        MANDATUM_OUTBOX_DIR=str(settings.outbox_dir),
        LOGNAME=logname,
    )

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return run_cli([*prefix, *args], env)

    return run


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment without any ``MANDATUM_*`` or ``DATABASE_URL``, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
    env.update(extra)
    return env


ENTRY_POINT = Path(sys.executable).parent / "mandatum"  # the installed console script


MASTER_KEY = base64.b64encode(b"c" * 32).decode()


PUBLIC_URL = "https://cli.mandatum.test:8443"


@dataclass
class Cli:
    env: dict[str, str]
    database_url: str
    var_dir: Path

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_cli(args, self.env)

    def run_all(self, *commands: tuple[tuple[str, ...], dict[str, str]]) -> list[tuple[int, str, str]]:
        """Independent commands, each with its extra environment: (code, out, err)."""
        results = []
        for args, env in commands:
            done = run_cli(args, {**self.env, **env})
            results.append((done.returncode, done.stdout, done.stderr))
        return results

    def json(self, *args: str) -> Any:
        done = self.run(*args, "--json")
        assert done.returncode == 0, done.stderr
        return json.loads(done.stdout)


def cli_env(database_url: str, var_dir: Path, **extra: str) -> dict[str, str]:
    return clean_env(
        MANDATUM_DATABASE_URL=database_url,
        MANDATUM_MASTER_KEY=MASTER_KEY,
        MANDATUM_VAR_DIR=str(var_dir),
        MANDATUM_PUBLIC_URL=PUBLIC_URL,
        **extra,
    )


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Cli:
    root = tmp_path_factory.mktemp("cli")
    url = f"sqlite:///{root / 'cli.db'}"
    tool = Cli(cli_env(url, root / "var"), url, root / "var")
    done = tool.run("db", "upgrade")
    assert done.returncode == 0, done.stderr
    assert "up to date" in done.stdout
    return tool
