"""All configuration in one place, read from the environment (prefix ``MANDATUM_``).

``DATABASE_URL`` is also read without the prefix because that is what every hosting platform
sets; ``MANDATUM_DATABASE_URL``, when set too, wins, being the more specific. In production the
service refuses to start with a missing or placeholder master key or without a database URL, and
a master key that is given must be base64 of 32 bytes in every environment.
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

from trust.context import context_url

log = logging.getLogger("mandatum.settings")
PROJECT_ROOT = Path(__file__).resolve().parent.parent
PLACEHOLDER_SECRETS = {"", "changeme", "change-me", "secret", "placeholder"}


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
    api_host: str = "127.0.0.1"
    api_port: int = 8000
    temporal_namespace: str = "default"
    task_queue: str = "mandatum"
    public_url: str = "http://127.0.0.1:8000"
    master_key: SecretStr | None = Field(
        default=None, description="base64 of 32 random bytes; encrypts stored secrets"
    )
    request_expiry: timedelta = timedelta(days=30)
    default_request_rate_per_minute: int = 60
    max_body_bytes: int = 1024 * 1024
    signature_window: timedelta = timedelta(minutes=5)
    rotation_grace: timedelta = timedelta(hours=24)
    idempotency_window: timedelta = timedelta(hours=24)
    reconcile_interval: timedelta = timedelta(seconds=5)
    reconcile_grace: timedelta = timedelta(seconds=10)
    auth_cache_seconds: float = 2.0
    # delivering codes (core.delivery): "outbox" writes them under var/outbox (development and
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
    # platform identity checks (core.kyc): "development" simulates them on a page of our own
    # (refused in production); "none" offers no platform KYC
    kyc_provider: Literal["none", "development"] = "development"

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
        if self.environment is Environment.PRODUCTION:
            if key.strip().lower() in PLACEHOLDER_SECRETS:
                raise ValueError("MANDATUM_MASTER_KEY must be set to a real key in production")
            if not self.database_url.strip():
                raise ValueError("DATABASE_URL must be set in production")
        if self.sms_transport == "http" and not self.sms_url.strip():
            raise ValueError("MANDATUM_SMS_URL must be set when MANDATUM_SMS_TRANSPORT=http")
        if self.master_key is not None:
            _decode_master_key(key)  # fail at start, not at the first secret to decrypt
        if self.environment is Environment.PRODUCTION and "outbox" in (self.email_transport,
                                                                       self.sms_transport):
            raise ValueError("the development outbox holds codes in files: set MANDATUM_EMAIL_"
                             "TRANSPORT=smtp and MANDATUM_SMS_TRANSPORT=http in production")
        if self.environment is Environment.PRODUCTION and self.kyc_provider == "development":
            raise ValueError("the development KYC provider approves anyone: set "
                             "MANDATUM_KYC_PROVIDER to a real provider (or none) in production")
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
    def service_did(self) -> str:
        """did:web of the service; a port is percent-encoded as did:web requires."""
        return "did:web:" + quote(urlsplit(self.public_url).netloc, safe="")

    def organization_did(self, org_id: str) -> str:
        return f"{self.service_did}:orgs:{org_id}"

    def subject_did(self, subject_uuid: str) -> str:
        return f"{self.service_did}:subjects:{subject_uuid}"

    @property
    def context_url(self) -> str:
        """Where our JSON-LD context is served (listed in every credential's ``@context``)."""
        return context_url(self.public_url)

    @property
    def dev_pages(self) -> bool:
        """The development pages (outbox, KYC simulator) are served (never in production)."""
        return self.environment is not Environment.PRODUCTION

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
            log.warning("generated a development master key at %s: it encrypts every stored secret "
                        "and key, so keep it with the data; production requires "
                        "MANDATUM_MASTER_KEY instead", path)
        return _decode_master_key(path.read_text().strip(), source=str(path))

    # webhook receivers on loopback addresses (core.egress): allowed outside production unless
    # false; production never allows them (only https to global addresses)
    webhook_allow_loopback: bool | None = None


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
