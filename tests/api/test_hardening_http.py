"""Production hardening of the HTTP surface and the files on disk (issue 12, item 13): security
headers on every answer, no ``Server`` banner from a real uvicorn, ``/docs`` served from the
installed package only, and owner-only files."""

from __future__ import annotations

import asyncio
import os
import re
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import httpx
import pytest
from temporalio.client import Client

from api.app import create_app
from cli.stack import Stack, api_command, child_env
from core.settings import Environment, Settings
from store.db import migrate
from tests.conftest import MASTER_KEY
from tests.support.api_client import SignedClient
from tests.support.cli import run_cli
from tests.support.ports import free_port

PROJECT = Path(__file__).resolve().parents[2]


async def test_api_answers_carry_nosniff_and_no_store(api: SignedClient, http: httpx.AsyncClient) -> None:
    me = await api.get("/me")
    refused = await http.get("/me")  # the signature middleware's own 401
    unknown = await http.get("/r/not-a-token")  # a subject's page (HTML)
    for answer, status in ((me, 200), (refused, 401), (unknown, 404)):
        assert answer.status_code == status
        assert answer.headers["x-content-type-options"] == "nosniff"
        assert answer.headers["cache-control"] == "no-store"
        assert "server" not in answer.headers
        assert "strict-transport-security" not in answer.headers  # not in development or tests


async def test_public_documents_keep_their_caching(http: httpx.AsyncClient) -> None:
    did = await http.get("/.well-known/did.json")
    context = await http.get("/ns/v1")
    assert did.status_code == context.status_code == 200
    assert did.headers["cache-control"] == "no-cache"  # revalidated with its ETag, but cacheable
    assert context.headers["cache-control"] == "public, max-age=86400"
    assert did.headers["x-content-type-options"] == context.headers["x-content-type-options"] == "nosniff"


async def test_production_answers_carry_hsts(settings: Settings, temporal: Client) -> None:
    production = settings.model_copy(update={"environment": Environment.PRODUCTION})
    transport = httpx.ASGITransport(app=create_app(production, temporal=temporal))
    async with httpx.AsyncClient(transport=transport, base_url="https://mandatum.test") as http:
        for path in ("/healthz", "/me", "/.well-known/did.json"):
            answer = await http.get(path)
            assert answer.headers["strict-transport-security"] == "max-age=31536000; includeSubDomains"
            assert answer.headers["x-content-type-options"] == "nosniff"


async def test_docs_come_from_the_installed_package_only(http: httpx.AsyncClient) -> None:
    page = await http.get("/docs")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    html = page.text
    refs = re.findall(r"""(?:src|href|url)\s*[=:]\s*["']([^"']+)["']""", html)
    assert refs and all(ref.startswith("/") and not ref.startswith("//") for ref in refs), refs
    assert not re.search(r"(?i)\b(?:https?:)?//[a-z0-9.-]+", html), "an external host in /docs"
    assert '"validatorUrl": null' in html
    csp = page.headers["content-security-policy"]
    assert "script-src 'self' 'unsafe-inline'" in csp and "frame-ancestors 'none'" in csp
    for ref in refs:
        if ref.startswith("/docs/assets/"):
            asset = await http.get(ref)
            assert asset.status_code == 200 and len(asset.content) > 500, ref
    bundle = await http.get("/docs/assets/swagger-ui-bundle.js")
    assert "SwaggerUIBundle" in bundle.text
    assert (await http.get("/redoc")).status_code == 404  # it would load its script from a CDN


async def test_real_uvicorn_sends_no_server_banner(
    tmp_path: Path,
    temporal: Client,
) -> None:
    """The API exactly as ``make run`` starts it (cli.stack.api_command) on a real port."""
    url = f"sqlite:///{tmp_path / 'var' / 'mandatum.db'}"
    migrate(url)
    port = free_port()
    settings = Settings(
        environment=Environment.TEST,
        var_dir=tmp_path / "var",
        database_url=url,
        master_key=MASTER_KEY,
        api_port=port,
        temporal_address=temporal.service_client.config.target_host,
    )
    proc = await asyncio.create_subprocess_exec(
        *api_command(settings),
        env=child_env(settings),
        cwd=PROJECT,
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=5) as http:
            for _ in range(400):  # until it answers (the process start takes a few seconds)
                try:
                    health = await http.get("/healthz")
                    break
                except httpx.TransportError:
                    assert proc.returncode is None, "the API exited"
                    await asyncio.sleep(0.05)
            else:
                pytest.fail("the API did not start")
            docs = await http.get("/docs")
        for answer in (health, docs):
            assert answer.status_code == 200
            assert "server" not in answer.headers, answer.headers
            assert answer.headers["x-content-type-options"] == "nosniff"
    finally:
        proc.terminate()
        await proc.wait()


def test_every_uvicorn_we_start_has_no_server_header() -> None:
    """uvicorn adds ``server: uvicorn`` itself, past any middleware: each command line turns it off
    (the image's, the compose file's, the dev stack's; the browser tests' server is checked live)."""
    dockerfile = (PROJECT / "Dockerfile").read_text()
    compose = (PROJECT / "docker-compose.yml").read_text()
    stack_cmd = api_command(Settings())
    commands = [line for line in [*dockerfile.splitlines(), *compose.split("command:")] if "uvicorn" in line]
    assert len(commands) >= 2 and "--no-server-header" in stack_cmd
    assert all("--no-server-header" in command for command in commands), commands
    assert "server_header=False" in (PROJECT / "tests" / "support" / "live_stack.py").read_text()
    # and the image holds every package pyproject installs (pip install . fails otherwise)
    packages = {name.split(".")[0] for name in re.findall(r'"([a-z_.]+)"', pyproject_packages())}
    copied = set(re.findall(r"^COPY (\w+) \./\1$", dockerfile, re.MULTILINE))
    assert packages <= copied, packages - copied


def pyproject_packages() -> str:
    text = (PROJECT / "pyproject.toml").read_text()
    return text.split("packages = [", 1)[1].split("]", 1)[0]


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_api_makes_its_files_owner_only(tmp_path: Path) -> None:
    """In a fresh process with the usual umask 022: the API's start makes var/ 0700, and the
    SQLite database, its WAL and shared memory, and the outbox's files 0600."""
    var = tmp_path / "var"
    var.mkdir(mode=0o755)
    var.chmod(0o755)  # as an older version (or a wide umask) left it
    script = textwrap.dedent("""
        import os, sys
        os.umask(0o022)
        from api.app import create_app
        from adapters.delivery import Message, outbox_of
        from core.settings import Environment, Settings
        from store.db import migrate
        settings = Settings(environment=Environment.TEST, var_dir=sys.argv[1], master_key=sys.argv[2])
        migrate(settings.sqlalchemy_url)
        app = create_app(settings)
        with app.state.ctx.engine.connect() as conn:  # the WAL and -shm exist while open
            conn.exec_driver_sql("SELECT count(*) FROM organization").all()
            outbox_of(settings).send(Message("email", "a@example.com", "code", "123456"))
            print("ready", flush=True)
            input()
    """)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(var), MASTER_KEY],
        cwd=PROJECT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env={**os.environ, "MANDATUM_ENVIRONMENT": "test"},
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        assert _mode(var) == 0o700
        db = var / "mandatum.db"
        for path in (db, db.with_name("mandatum.db-wal"), db.with_name("mandatum.db-shm")):
            assert path.exists() and _mode(path) == 0o600, (path, oct(_mode(path)))
        outbox = var / "outbox"
        files = list(outbox.glob("*.json"))
        assert files and _mode(outbox) == 0o700 and all(_mode(f) == 0o600 for f in files)
    finally:
        proc.communicate("\n", timeout=30)


def test_the_cli_and_an_existing_database_become_owner_only(tmp_path: Path) -> None:
    var = tmp_path / "var"
    var.mkdir()
    db = var / "mandatum.db"
    db.touch()
    for path in (var, db):
        path.chmod(0o755 if path.is_dir() else 0o644)  # left readable by an older version
    env = {k: v for k, v in os.environ.items() if not k.startswith("MANDATUM_") and k != "DATABASE_URL"}
    env.update(MANDATUM_ENVIRONMENT="development", MANDATUM_VAR_DIR=str(var), MANDATUM_MASTER_KEY=MASTER_KEY)
    run = run_cli(["db", "upgrade"], env)
    assert run.returncode == 0, run.stderr
    run = run_cli(["org", "list"], env)
    assert run.returncode == 0, run.stderr
    assert _mode(var) == 0o700 and _mode(db) == 0o600
    for extra in (db.with_name("mandatum.db-wal"), db.with_name("mandatum.db-shm")):
        assert not extra.exists() or _mode(extra) == 0o600


async def test_stack_logs_are_owner_only(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        settings = Settings(environment=Environment.TEST, var_dir=tmp_path, master_key=MASTER_KEY)
        stack = Stack(settings, echo=False)
        stack.log_dir.mkdir(mode=0o755)
        stack.log_dir.chmod(0o755)
        child = await stack._spawn("probe", ["true"], echo=False)
        await child.proc.wait()
        await child.pipe
    finally:
        os.umask(old)
    assert _mode(tmp_path / "log") == 0o700 and _mode(tmp_path / "log" / "probe.log") == 0o600
