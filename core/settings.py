"""All configuration in one place, read from the environment (prefix ``MANDATUM_``).

``DATABASE_URL`` is also read without the prefix because that is what every hosting platform
sets. Outside development the service refuses to start with a missing or placeholder master key.
"""

from __future__ import annotations

import base64
import secrets
from datetime import timedelta
from enum import StrEnum
from functools import lru_cache
from pathlib import Path
from urllib.parse import quote, urlsplit

from pydantic import AliasChoices, Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

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
        validation_alias=AliasChoices("DATABASE_URL", "MANDATUM_DATABASE_URL"),
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

    @model_validator(mode="after")
    def _refuse_placeholders(self) -> Settings:
        if self.environment is Environment.PRODUCTION:
            key = self.master_key.get_secret_value() if self.master_key else ""
            if key.strip().lower() in PLACEHOLDER_SECRETS:
                raise ValueError("MANDATUM_MASTER_KEY must be set to a real key in production")
            if not self.database_url:
                raise ValueError("DATABASE_URL must be set in production")
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

    def master_key_bytes(self) -> bytes:
        """The master key; in development it is generated once under var/ and reused."""
        if self.master_key is not None:
            raw = base64.b64decode(self.master_key.get_secret_value())
            if len(raw) != 32:
                raise ValueError("MANDATUM_MASTER_KEY must be base64 of exactly 32 bytes")
            return raw
        if self.environment is Environment.PRODUCTION:
            raise ValueError("MANDATUM_MASTER_KEY is required in production")
        path = self.var_dir / "master.key"
        if not path.exists():
            self.var_dir.mkdir(parents=True, exist_ok=True)
            tmp = path.with_suffix(".tmp")
            tmp.write_text(base64.b64encode(secrets.token_bytes(32)).decode())
            tmp.chmod(0o600)
            try:
                tmp.rename(path) if not path.exists() else tmp.unlink()
            except FileExistsError:  # pragma: no cover - lost a race with another process
                tmp.unlink(missing_ok=True)
        return base64.b64decode(path.read_text().strip())


@lru_cache
def get_settings() -> Settings:
    return Settings()
