"""All configuration in one place, read from the environment (prefix ``MANDATUM_``).

``DATABASE_URL`` is also read without the prefix because that is what every hosting platform
sets; ``MANDATUM_DATABASE_URL``, when set too, wins, being the more specific. In production the
service refuses to start with a missing, placeholder or low-entropy master key (a repeated byte,
few distinct bytes, printable text), a public URL that is not ``https``, without a database URL, or
on SQLite unless ``MANDATUM_SQLITE_SINGLE_NODE=true`` says the installation is one machine; a master
key that is given must be base64 of 32 bytes in every environment.

``MANDATUM_PUBLIC_URL``, when not set, is derived from the API's host and port
(``public_url_for``), so ``make run``, its children and every ``mandatum`` command agree on the
service's DIDs for a stack on any port.
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
from datetime import timedelta
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from typing import Literal
from urllib.parse import quote, urlsplit

from pydantic import AliasChoices, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

log = logging.getLogger("mandatum.settings")
PROJECT_ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER_SECRETS = {"", "changeme", "change-me", "secret", "placeholder"}
LOG_LEVELS = ("debug", "info", "warning", "error")
MIN_DISTINCT_KEY_BYTES = 16  # 32 random bytes have about 30 distinct values; fewer than 16 is never luck


class Environment(StrEnum):
    DEVELOPMENT = "development"
    TEST = "test"
    PRODUCTION = "production"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="MANDATUM_", extra="ignore")

    environment: Environment = Environment.DEVELOPMENT
    var_dir: Path = PROJECT_ROOT / "var"
    database_url: str = Field(
        default="",
        validation_alias=AliasChoices("MANDATUM_DATABASE_URL", "DATABASE_URL"),
        description="SQLAlchemy URL; empty means the SQLite file var/mandatum.db",
    )
    temporal_address: str = "127.0.0.1:7233"
    temporal_ui_port: int = 8233
    temporal_ui_url: str = Field(
        default="",
        description="where people open the Temporal UI; empty: http://<Temporal host>:<temporal_ui_port>",
    )
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    # the worker's /healthz and /readyz (worker.health); unset (the default) serves none
    worker_health_host: str = "127.0.0.1"
    worker_health_port: int | None = Field(
        default=None, ge=1, le=65535, description="port of the worker's health endpoint; unset: none"
    )
    temporal_namespace: str = "default"
    temporal_grpc_compression: Literal["none", "gzip"] = Field(
        default="none",
        description="gRPC compression to Temporal: none (same host or network) or gzip (a distant cluster)",
    )
    task_queue: str = "mandatum"
    public_url: str = Field(
        default="",
        description="where the service is reached; empty means http://<api_host>:<api_port> (development)",
    )
    sqlite_single_node: bool = Field(
        default=False,
        description="production on SQLite: the operator states the installation is one machine (no replicas)",
    )
    master_key: SecretStr | None = Field(
        default=None, description="base64 of 32 random bytes; encrypts stored secrets"
    )
    request_expiry: timedelta = timedelta(days=30)
    default_request_rate_per_minute: int = 60
    max_body_bytes: int = 1024 * 1024
    signature_window: timedelta = timedelta(minutes=5)
    rotation_grace: timedelta = timedelta(hours=24)
    # the dashboard (issue 14): sessions end after this long idle, or this long after login at most;
    # invitation and password-reset links live this long; logins back off after this many failures
    # for one address from one client address, or this many from one client address in all
    # (services.logins)
    dashboard_idle: timedelta = timedelta(minutes=30)
    dashboard_session_max: timedelta = timedelta(hours=12)
    member_link_lifetime: timedelta = timedelta(hours=72)
    login_failures_before_lock: int = Field(default=5, ge=1, le=100)
    login_failures_per_client: int = Field(default=20, ge=1, le=10_000)
    idempotency_window: timedelta = timedelta(hours=24)
    # costly rules run in evaluation processes (services.rule_pool): how many, and how many of one
    # organization's verifications may wait for one before it is told to retry (429)
    rule_processes: int = Field(default=2, ge=1, le=64)
    rule_waiting_per_organization: int = Field(default=32, ge=1, le=10_000)
    reconcile_interval: timedelta = timedelta(seconds=5)
    reconcile_grace: timedelta = timedelta(seconds=10)
    auth_cache_seconds: float = 2.0
    # delivering codes (adapters.delivery): "outbox" writes them under var/outbox (development and
    # tests only), "smtp" and "http" send them
    email_transport: Literal["outbox", "smtp"] = "outbox"
    outbox_dir: Path | None = None  # default var/outbox
    smtp_host: str = "127.0.0.1"
    smtp_port: int = 25
    smtp_security: Literal["none", "starttls", "tls"] = "none"
    smtp_username: str | None = None
    smtp_password: SecretStr | None = None
    smtp_sender: str = "Mandatum <no-reply@localhost>"
    smtp_timeout_seconds: float = 15.0
    sms_transport: Literal["outbox", "http", "none"] = "outbox"  # none: phone contacts get no code
    sms_url: str = ""
    sms_token: SecretStr | None = None
    sms_timeout_seconds: float = 10.0
    # platform identity checks (adapters.kyc): "development" simulates them on a page of our own
    # (refused in production); "none" offers no platform KYC
    kyc_provider: Literal["none", "development"] = "development"

    @field_validator("worker_health_port", mode="before")
    @classmethod
    def _blank_port_is_unset(cls, value: object) -> object:
        """``MANDATUM_WORKER_HEALTH_PORT=`` (set but empty) means no health endpoint."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("master_key", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: object) -> object:
        """``MANDATUM_MASTER_KEY=`` (set but empty) means no key: generated in development,
        refused in production."""
        raw = value.get_secret_value() if isinstance(value, SecretStr) else value
        return None if isinstance(raw, str) and not raw.strip() else value

    @model_validator(mode="after")
    def _refuse_placeholders(self) -> Settings:
        key = self.master_key.get_secret_value() if self.master_key else ""
        production = self.environment is Environment.PRODUCTION
        if production and key.strip().lower() in PLACEHOLDER_SECRETS:
            raise ValueError("MANDATUM_MASTER_KEY must be set to a real key in production")
        if self.master_key is not None:
            raw = _decode_master_key(key)  # fail at start, not at the first secret to decrypt
            weakness = _master_key_weakness(raw)
            if weakness and production:
                raise ValueError(
                    f"MANDATUM_MASTER_KEY {weakness}: use base64 of 32 random bytes "
                    "(e.g. `openssl rand -base64 32`) in production"
                )
        ui = urlsplit(self.temporal_ui_url.strip())
        if self.temporal_ui_url.strip() and (ui.scheme not in ("http", "https") or not ui.netloc):
            raise ValueError(
                "MANDATUM_TEMPORAL_UI_URL must be an http(s) URL, e.g. https://temporal.example.com"
            )
        if not self.public_url.strip():
            self.public_url = public_url_for(self.api_host, self.api_port)
        self.public_url = _checked_public_url(self.public_url, self.environment)
        if production and not self.database_url.strip():
            raise ValueError("DATABASE_URL must be set in production")
        if production and self.sqlalchemy_url.startswith("sqlite") and not self.sqlite_single_node:
            raise ValueError(
                "SQLite serves one machine only: set DATABASE_URL to PostgreSQL, or "
                "MANDATUM_SQLITE_SINGLE_NODE=true for a single-node installation"
            )
        if self.sms_transport == "http" and not self.sms_url.strip():
            raise ValueError("MANDATUM_SMS_URL must be set when MANDATUM_SMS_TRANSPORT=http")
        if production and "outbox" in (self.email_transport, self.sms_transport):
            raise ValueError(
                "the development outbox holds codes in files: set MANDATUM_EMAIL_"
                "TRANSPORT=smtp and MANDATUM_SMS_TRANSPORT=http in production"
            )
        if production and self.kyc_provider == "development":
            raise ValueError(
                "the development KYC provider approves anyone: set "
                "MANDATUM_KYC_PROVIDER to a real provider (or none) in production"
            )
        return self

    @property
    def sqlalchemy_url(self) -> str:
        if self.database_url:
            url = self.database_url
            if url.startswith("postgresql://") or url.startswith("postgres://"):
                url = "postgresql+psycopg://" + url.split("://", 1)[1]
            return url
        return f"sqlite:///{self.var_dir / 'mandatum.db'}"

    @property
    def dev_pages(self) -> bool:
        """The development pages (``/dev/...``: the outbox, the KYC simulator) are served: in
        development only. A test or staging installation's outbox holds real codes and links."""
        return self.environment is Environment.DEVELOPMENT

    @property
    def allow_loopback_http(self) -> bool:
        """``http`` on a loopback host is allowed for redirect URLs and frame origins (outside
        production: a developer's or a test's local pages)."""
        return self.environment is not Environment.PRODUCTION

    def temporal_ui_workflows(self) -> str:
        """The Temporal UI's list of the namespace's workflows (a workflow's page is below it)."""
        base = self.temporal_ui_url.strip().rstrip("/")
        if not base:
            host = browsable(self.temporal_address.rpartition(":")[0])
            base = f"http://{f'[{host}]' if ':' in host else host}:{self.temporal_ui_port}"
        return f"{base}/namespaces/{quote(self.temporal_namespace, safe='')}/workflows"

    def status_list_url(self, list_id: str) -> str:
        """Where the Bitstring Status List credential ``list_id`` is served."""
        return f"{self.public_url.rstrip('/')}/credentials/status/{list_id}"

    def master_key_bytes(self) -> bytes:
        """The master key; in development it is generated once under var/ and reused."""
        if self.master_key is not None:
            return _decode_master_key(self.master_key.get_secret_value())
        if self.environment is Environment.PRODUCTION:
            raise ValueError("MANDATUM_MASTER_KEY is required in production")
        path = self.var_dir / "master.key"
        if not path.exists() and _create_once(path, base64.b64encode(secrets.token_bytes(32)).decode()):
            log.warning(
                "generated a development master key at %s: it encrypts every stored secret "
                "and key, so keep it with the data; production requires "
                "MANDATUM_MASTER_KEY instead",
                path,
            )
        return _decode_master_key(path.read_text().strip(), source=str(path))

    # webhook receivers on loopback addresses (adapters.egress): allowed outside production unless
    # false; production never allows them (only https to global addresses)
    webhook_allow_loopback: bool | None = None

    # logs, metrics and traces (core.observe; docs/architecture.md "Logs, metrics and traces").
    # Logs: one JSON object a line, or text for a person; unset, JSON in production, text elsewhere.
    # The level is our loggers' (mandatum.*); libraries log INFO and up, and the few whose lines
    # carry SQL parameters, URLs or form data (core.observe.logs.QUIET) WARNING and up.
    log_format: Literal["json", "text"] | None = None
    log_level: Literal["DEBUG", "INFO", "WARNING", "ERROR"] = "INFO"
    # Prometheus /metrics of each process on a port of its own, never the public API's; unset: none.
    # The worker's Temporal SDK metrics are the SDK's own exporter, on worker_sdk_metrics_port.
    api_metrics_host: str = "127.0.0.1"
    api_metrics_port: int | None = Field(default=None, ge=0, le=65535)
    worker_metrics_host: str = "127.0.0.1"
    worker_metrics_port: int | None = Field(default=None, ge=0, le=65535)
    worker_sdk_metrics_port: int | None = Field(default=None, ge=1, le=65535)
    # the Temporal dev server's /metrics (make run only: cli/stack.py); unset: a random free port
    temporal_metrics_port: int | None = Field(default=None, ge=1, le=65535)

    @field_validator(
        "api_metrics_port",
        "worker_metrics_port",
        "worker_sdk_metrics_port",
        "temporal_metrics_port",
        "log_format",
        mode="before",
    )
    @classmethod
    def _blank_is_none(cls, value: object) -> object:
        """A variable set but empty (``MANDATUM_API_METRICS_PORT=``) means unset."""
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("log_level", "log_format", mode="before")
    @classmethod
    def _any_case(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        return value.strip().upper() if value.strip().lower() in LOG_LEVELS else value.strip().lower()

    @property
    def log_format_resolved(self) -> Literal["json", "text"]:
        """JSON lines in production (for a log collector), text for a person everywhere else."""
        if self.log_format is not None:
            return self.log_format
        return "json" if self.environment is Environment.PRODUCTION else "text"


def browsable(host: str) -> str:
    """A host to put in a URL: a wildcard bind address is reached through localhost."""
    return "localhost" if host in ("", "0.0.0.0", "::") else host  # noqa: S104 - compared, not bound


def public_url_for(api_host: str, api_port: int) -> str:
    """The public URL of a service nobody gave one: where its API listens (development)."""
    host = browsable(api_host)
    return f"http://{f'[{host}]' if ':' in host else host}:{api_port}"


def _checked_public_url(value: str, environment: Environment) -> str:
    """The public URL as an origin (``scheme://host[:port]``): it names our DIDs and every link we
    send, so anything else (credentials, a path, a query, a fragment, a stray character) is refused
    here rather than copied into a DID, a message or a header."""
    url = value.strip().rstrip("/")
    try:
        parts = urlsplit(url)
        port_ok = parts.port is None or parts.port > 0  # .port raises on a port that is not one
    except ValueError as exc:
        raise ValueError(f"MANDATUM_PUBLIC_URL is not a URL: {value!r}") from exc
    stray = "#" in url or "?" in url or any(ch.isspace() or not ch.isprintable() for ch in url)
    if (
        stray
        or not port_ok
        or parts.scheme not in ("http", "https")
        or not parts.hostname
        or parts.username is not None
        or parts.password is not None
        or parts.path
        or parts.query
        or parts.fragment
    ):
        raise ValueError(
            "MANDATUM_PUBLIC_URL must be an origin like https://mandatum.example.com "
            f"(no path, query, credentials or fragment), not {value!r}"
        )
    if environment is Environment.PRODUCTION and parts.scheme != "https":
        raise ValueError(f"MANDATUM_PUBLIC_URL must be https in production, not {value!r}")
    return url


def _master_key_weakness(raw: bytes) -> str | None:
    """Why 32 bytes are not a random key (None when nothing shows): few distinct values (all zeros,
    a repeated byte, a short pattern) or printable text of the right length, which is a password
    someone typed, not key material."""
    distinct = len(set(raw))
    if distinct < MIN_DISTINCT_KEY_BYTES:
        return f"has only {distinct} distinct byte values"
    if all(0x20 <= b < 0x7F for b in raw):
        return "is printable text, not random bytes"
    return None


def _decode_master_key(value: str, source: str = "MANDATUM_MASTER_KEY") -> bytes:
    try:
        raw = base64.b64decode(value.strip(), validate=True)
    except ValueError as exc:
        raise ValueError(f"{source} must be base64 of exactly 32 bytes") from exc
    if len(raw) != 32:
        raise ValueError(f"{source} must be base64 of exactly 32 bytes")
    return raw


def _create_once(path: Path, content: str) -> bool:
    """Write ``path`` unless it exists, atomically: concurrent first starts (API, worker, CLI)
    all end up reading the one key that won, never a half-written file or a key overwritten
    after another process already used its own. True when this call created it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w") as f:
            f.write(content)
            f.flush()
            os.fsync(f.fileno())
        try:
            os.link(tmp, path)  # fails if another process made the key first
        except FileExistsError:
            return False
        except OSError:  # a file system without hard links: last resort, not race-free
            if path.exists():
                return False
            os.replace(tmp, path)
        return True
    finally:
        tmp.unlink(missing_ok=True)


@lru_cache
def get_settings() -> Settings:
    return Settings()
