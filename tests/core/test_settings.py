"""core.settings: the settings that guard secrets and name the service."""

from __future__ import annotations

import base64
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from pydantic import ValidationError

from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from trust.did import web_organization_did, web_service_did, web_subject_did

GOOD_KEY = base64.b64encode(bytes(range(200, 232))).decode()  # 32 distinct, not text


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Settings read the environment: these tests decide every value themselves."""
    for name in (
        "DATABASE_URL",
        "MANDATUM_DATABASE_URL",
        "MANDATUM_MASTER_KEY",
        "MANDATUM_ENVIRONMENT",
        "MANDATUM_PUBLIC_URL",
        "MANDATUM_VAR_DIR",
        "MANDATUM_API_HOST",
        "MANDATUM_API_PORT",
        "MANDATUM_SQLITE_SINGLE_NODE",
    ):
        monkeypatch.delenv(name, raising=False)


# --- Settings: production refuses placeholders -----------------------------------------------------


def _production(**kw: object) -> Settings:
    return Settings(**{**_production_values(), **kw})  # type: ignore[arg-type]


def _production_values() -> dict[str, object]:
    return {
        "environment": Environment.PRODUCTION,
        "database_url": "postgresql://db/mandatum",
        "master_key": GOOD_KEY,
        "email_transport": "smtp",
        "sms_transport": "http",
        "sms_url": "https://sms.example/send",
        "kyc_provider": "none",
        "public_url": "https://mandatum.example",
    }


def test_production_accepts_real_values(tmp_path: Path) -> None:
    settings = _production(var_dir=tmp_path)
    assert settings.master_key_bytes() == bytes(range(200, 232))
    assert settings.sqlalchemy_url == "postgresql+psycopg://db/mandatum"
    assert not (tmp_path / "master.key").exists()


@pytest.mark.parametrize(
    "key", [None, "", "   ", "changeme", "CHANGEME", "change-me", "secret", "placeholder"]
)
def test_production_refuses_a_missing_or_placeholder_master_key(key: str | None) -> None:
    with pytest.raises(ValidationError, match="MANDATUM_MASTER_KEY"):
        _production(master_key=key)


@pytest.mark.parametrize(
    "key", ["not base64 at all!", base64.b64encode(b"short").decode(), base64.b64encode(b"x" * 33).decode()]
)
def test_a_master_key_that_is_not_32_bytes_is_refused_at_start(key: str) -> None:
    with pytest.raises(ValidationError, match="32 bytes"):
        _production(master_key=key)
    with pytest.raises(ValidationError, match="32 bytes"):
        Settings(environment=Environment.DEVELOPMENT, master_key=key)


@pytest.mark.parametrize("url", ["", "  "])
def test_production_refuses_a_missing_database_url(url: str) -> None:
    with pytest.raises(ValidationError, match="DATABASE_URL"):
        _production(database_url=url)


def test_production_refuses_the_development_outbox() -> None:
    for transports in ({"email_transport": "outbox"}, {"sms_transport": "outbox"}):
        with pytest.raises(ValidationError, match="outbox"):
            _production(**transports)
    with pytest.raises(ValidationError, match="MANDATUM_SMS_URL"):
        _production(sms_url="")
    with pytest.raises(ValidationError, match="KYC"):
        _production(kyc_provider="development")
    assert _production(sms_transport="none", sms_url="").sms_transport == "none"  # e-mail only
    assert Settings(environment=Environment.DEVELOPMENT).email_transport == "outbox"


def test_production_reads_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MANDATUM_ENVIRONMENT", "production")
    monkeypatch.setenv("MANDATUM_EMAIL_TRANSPORT", "smtp")
    monkeypatch.setenv("MANDATUM_SMS_TRANSPORT", "http")
    monkeypatch.setenv("MANDATUM_SMS_URL", "https://sms.example/send")
    monkeypatch.setenv("MANDATUM_KYC_PROVIDER", "none")
    monkeypatch.setenv("MANDATUM_MASTER_KEY", GOOD_KEY)
    monkeypatch.setenv("MANDATUM_PUBLIC_URL", "https://mandatum.example")
    with pytest.raises(ValidationError, match="DATABASE_URL"):
        Settings()
    monkeypatch.setenv("DATABASE_URL", "postgres://u@h/d")
    assert Settings().sqlalchemy_url == "postgresql+psycopg://u@h/d"
    monkeypatch.setenv("MANDATUM_MASTER_KEY", "changeme")
    with pytest.raises(ValidationError, match="MANDATUM_MASTER_KEY"):
        Settings()


# --- Settings: production hardening (weak keys, plain http, SQLite) ------------------------------


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        (bytes(32), "1 distinct byte"),
        (b"\xa7" * 32, "1 distinct byte"),
        (bytes([0, 255]) * 16, "2 distinct byte"),
        (bytes(range(128, 143)) * 2 + b"\x80\x81", "15 distinct byte"),
        (b"kX9#pQ2$vB7!mN4@zR8%wT1^yL6&hJ3*", "printable text"),  # a typed password
        (bytes(range(0x30, 0x50)), "printable text"),  # 32 distinct bytes, still typed text
    ],
)
def test_production_refuses_a_master_key_with_little_entropy(raw: bytes, why: str) -> None:
    key = base64.b64encode(raw).decode()
    with pytest.raises(ValidationError, match=r"MANDATUM_MASTER_KEY (has only|is printable)") as err:
        _production(master_key=key)
    assert why.replace(" byte", "") in str(err.value)
    # development and tests keep working with simple keys (the test suite's is b"k" * 32)
    assert Settings(environment=Environment.TEST, master_key=key).master_key_bytes() == raw


@pytest.mark.parametrize("url", ["http://mandatum.example", "http://127.0.0.1:8000", ""])
def test_production_refuses_a_public_url_that_is_not_https(url: str) -> None:
    with pytest.raises(ValidationError, match="MANDATUM_PUBLIC_URL must be https in production"):
        _production(public_url=url)
    assert (
        _production(public_url="https://mandatum.example:8443").public_url == "https://mandatum.example:8443"
    )


@pytest.mark.parametrize(
    "url",
    [
        "https://mandatum.example/path",
        "https://user:pw@mandatum.example",
        "https://mandatum.example?x=1",
        "https://mandatum.example#frag",
        "javascript:alert(1)",
        "https://",
        "https://mandatum.example:99999",
        "https://mandatum.example\r\nSet-Cookie: a=b",
        'https://mandatum.example/"><script>',
    ],
)
def test_a_public_url_that_is_not_an_origin_is_refused_everywhere(url: str) -> None:
    for environment in (Environment.DEVELOPMENT, Environment.PRODUCTION):
        with pytest.raises(ValidationError, match="MANDATUM_PUBLIC_URL"):
            Settings(**{**_production_values(), "environment": environment, "public_url": url})  # type: ignore[arg-type]


def test_production_refuses_sqlite_unless_declared_single_node(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'mandatum.db'}"
    with pytest.raises(ValidationError, match="MANDATUM_SQLITE_SINGLE_NODE"):
        _production(database_url=url)
    assert _production(database_url=url, sqlite_single_node=True).sqlalchemy_url == url


def test_production_reads_the_single_node_setting(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for name, value in _production_values().items():
        monkeypatch.setenv(f"MANDATUM_{name.upper()}", str(value))
    monkeypatch.setenv("MANDATUM_DATABASE_URL", f"sqlite:///{tmp_path / 'm.db'}")
    with pytest.raises(ValidationError, match="SQLite serves one machine only"):
        Settings()
    monkeypatch.setenv("MANDATUM_SQLITE_SINGLE_NODE", "true")
    assert Settings().sqlite_single_node


def test_the_public_url_follows_the_api_port_when_not_set(monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``make run`` gives its children is what every ``mandatum`` command derives alone."""
    monkeypatch.setenv("MANDATUM_API_PORT", "8123")
    assert Settings().public_url == "http://127.0.0.1:8123"
    assert web_service_did(Settings().public_url) == "did:web:127.0.0.1%3A8123"
    monkeypatch.setenv("MANDATUM_API_HOST", "0.0.0.0")  # noqa: S104 - a setting, not a bind
    assert Settings().public_url == "http://localhost:8123"
    monkeypatch.setenv("MANDATUM_PUBLIC_URL", "https://mandatum.example/")
    assert Settings().public_url == "https://mandatum.example"


def test_database_url_prefers_the_project_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://platform/db")
    assert Settings().database_url == "postgresql://platform/db"
    monkeypatch.setenv("MANDATUM_DATABASE_URL", "sqlite:///explicit.db")
    assert Settings().database_url == "sqlite:///explicit.db"


def test_default_database_is_sqlite_under_var_dir(tmp_path: Path) -> None:
    assert Settings(var_dir=tmp_path).sqlalchemy_url == f"sqlite:///{tmp_path / 'mandatum.db'}"


# --- Settings: DIDs ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("public_url", "did"),
    [
        ("https://mandatum.example", "did:web:mandatum.example"),
        ("https://mandatum.example:8443", "did:web:mandatum.example%3A8443"),
        ("http://127.0.0.1:8000", "did:web:127.0.0.1%3A8000"),
        ("https://mandatum.example/", "did:web:mandatum.example"),
    ],
)
def test_service_did_percent_encodes_a_port(public_url: str, did: str) -> None:
    settings = Settings(public_url=public_url)
    assert web_service_did(settings.public_url) == did
    assert web_organization_did(settings.public_url, "0" * 24) == f"{did}:orgs:{'0' * 24}"
    assert web_subject_did(settings.public_url, "abc") == f"{did}:subjects:abc"


# --- Settings: the development master key --------------------------------------------------------


def test_development_master_key_is_generated_once_and_reused(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    var = tmp_path / "var"
    with caplog.at_level("WARNING", logger="mandatum.settings"):
        first = Settings(var_dir=var).master_key_bytes()
    path = var / "master.key"
    said = [r.getMessage() for r in caplog.records if r.name == "mandatum.settings"]
    assert len(said) == 1 and str(path) in said[0] and "MANDATUM_MASTER_KEY" in said[0]
    assert len(first) == 32 and path.exists()
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert base64.b64decode(path.read_text()) == first
    caplog.clear()
    with caplog.at_level("WARNING", logger="mandatum.settings"):
        assert Settings(var_dir=var).master_key_bytes() == first
    assert not [r for r in caplog.records if r.name == "mandatum.settings"]  # said once only
    assert Settings(var_dir=tmp_path / "other").master_key_bytes() != first
    assert [p.name for p in var.iterdir()] == ["master.key"]  # no temporary file left behind
    # what one process encrypted, the next one decrypts
    sealed = SecretCipher(first).encrypt("s3cret")
    assert SecretCipher(Settings(var_dir=var).master_key_bytes()).decrypt(sealed) == "s3cret"


def test_development_master_key_has_one_winner_under_concurrency(tmp_path: Path) -> None:
    """API, worker and CLI may all start first; they must all end up with the same key."""
    var = tmp_path / "race"
    barrier = threading.Barrier(12)
    keys: list[bytes] = []
    errors: list[BaseException] = []

    def start() -> None:
        settings = Settings(var_dir=var)
        barrier.wait()
        try:
            keys.append(settings.master_key_bytes())
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=start) for _ in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(keys) == 12 and len(set(keys)) == 1
    assert base64.b64decode((var / "master.key").read_text()) == keys[0]


def test_development_master_key_race_between_processes(tmp_path: Path) -> None:
    var = tmp_path / "procs"
    code = (
        "import sys, base64; from core.settings import Settings; "
        "print(base64.b64encode(Settings(var_dir=sys.argv[1]).master_key_bytes()).decode())"
    )
    root = Path(__file__).resolve().parents[2]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code, str(var)],
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outs = [p.communicate(timeout=60) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert len({o[0].strip() for o in outs}) == 1
    assert outs[0][0].strip() == (var / "master.key").read_text().strip()


def test_a_corrupt_development_master_key_is_refused(tmp_path: Path) -> None:
    (tmp_path / "master.key").write_text("c2hvcnQ=")
    with pytest.raises(ValueError, match="32 bytes"):
        Settings(var_dir=tmp_path).master_key_bytes()


def test_a_blank_master_key_means_unset_in_development(tmp_path: Path) -> None:
    settings = Settings(var_dir=tmp_path, master_key="  ")
    assert settings.master_key is None
    assert len(settings.master_key_bytes()) == 32 and (tmp_path / "master.key").exists()


def test_production_never_generates_a_master_key(tmp_path: Path) -> None:
    settings = _production(var_dir=tmp_path)
    object.__setattr__(settings, "master_key", None)
    with pytest.raises(ValueError, match="required in production"):
        settings.master_key_bytes()
    assert not (tmp_path / "master.key").exists()


# --- Settings: the Temporal UI -------------------------------------------------------------------


@pytest.mark.parametrize(
    "url",
    ["javascript:alert(1)", "ftp://temporal.example", "temporal.example", "https://", "data:text/html,x"],
)
def test_the_temporal_ui_url_is_an_http_url(url: str) -> None:
    """It becomes a link on the dashboard's request pages: only an http(s) URL is taken."""
    with pytest.raises(ValidationError, match="MANDATUM_TEMPORAL_UI_URL must be an http"):
        Settings(environment=Environment.TEST, temporal_ui_url=url)


def test_the_temporal_ui_link_of_a_workflow() -> None:
    derived = Settings(environment=Environment.TEST, temporal_address="10.0.0.5:7233", temporal_ui_port=8080)
    assert derived.temporal_ui_workflows() == "http://10.0.0.5:8080/namespaces/default/workflows"
    given = Settings(
        environment=Environment.TEST,
        temporal_ui_url="https://temporal.example/ui/",
        temporal_namespace="prod/eu",
    )
    assert given.temporal_ui_workflows() == "https://temporal.example/ui/namespaces/prod%2Feu/workflows"
    wildcard = Settings(environment=Environment.TEST, temporal_address="0.0.0.0:7233")
    assert wildcard.temporal_ui_workflows() == "http://localhost:8233/namespaces/default/workflows"
