"""Webhook URLs cannot make the service reach its own network (issue 12, item 10): the URL is
checked when it is set and its resolved addresses again at every delivery, the POST goes to the
address that was checked, and the stored error never repeats what the other end answered.

The resolver is replaced at its seam (``EgressPolicy.resolve``), never the network: the receivers
are real servers on 127.0.0.1 reached under names that only the fake resolver knows."""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from sqlalchemy import Engine
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.webhooks import WebhookActivities
from adapters.egress import EgressPolicy, describe_failure, pinned_request, post_pinned
from core.secretbox import SecretCipher
from core.settings import Environment, Settings
from store import webhooks as store
from tests.support.api_client import Credentials
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, receiving
from tests.support.webhooks import LOCAL, create_test_event
from workflows.webhook_messages import DeliverWebhookInput

PUBLIC = "93.184.215.14"  # a global address (never connected to here)
BAD_NAMES = {
    "internal.example.com": ["10.1.2.3"],
    "meta.example.com": ["169.254.169.254"],
    "mixed.example.com": [PUBLIC, "127.0.0.1"],
    "v6.example.com": ["2606:4700::1111", "fd00::1"],
    "mapped.example.com": ["::ffff:127.0.0.1"],
}


class FakeResolver:
    """Answers from a table (a list of answers is used one per call, the last one repeated);
    names not in it do not resolve. Counts the calls."""

    def __init__(self, table: dict[str, list[str] | list[list[str]]]) -> None:
        self.table = table
        self.calls: list[str] = []

    def __call__(self, host: str, port: int) -> Sequence[str]:
        self.calls.append(host)
        answer = self.table.get(host)
        if answer is None:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        if answer and isinstance(answer[0], list):
            index = min(len([c for c in self.calls if c == host]), len(answer)) - 1
            return list(answer[index])
        return [str(a) for a in answer]


def production(settings: Settings, resolve: FakeResolver) -> EgressPolicy:
    return EgressPolicy.of(settings.model_copy(update={"environment": Environment.PRODUCTION}), resolve)


def hook(url: str) -> store.WebhookSettings:
    return store.WebhookSettings(url, SIGNATURE_SECRET, ENCRYPTION_SECRET, SALT)


REFUSED_IN_PRODUCTION = [
    "http://hooks.example.com/x",  # https only
    "https://127.0.0.1/x",
    "https://2130706433/x",
    "https://0x7f.1/x",
    "https://0177.0.0.1/x",
    "https://127.1/x",
    "https://0/x",
    "https://0.0.0.0/x",
    "https://[::]/x",
    "https://[::1]/x",
    "https://[::ffff:127.0.0.1]/x",
    "https://[::ffff:7f00:1]/x",
    "https://[64:ff9b::7f00:1]/x",
    "https://[64:ff9b::a00:1]/x",
    "https://[2002:7f00:1::]/x",
    "https://[2002:c0a8:101::]/x",
    "https://10.0.0.1/x",
    "https://172.16.5.4/x",
    "https://192.168.1.1:8443/x",
    "https://169.254.169.254/latest/meta-data",
    "https://[fe80::1]/x",
    "https://100.64.0.1/x",
    "https://100.127.255.254/x",
    "https://224.0.0.1/x",
    "https://[ff02::1]/x",
    "https://[ff0e::1]/x",
    "https://240.0.0.1/x",
    "https://255.255.255.255/x",
    "https://[fc00::1]/x",
    "https://[fd12:3456::1]/x",
    "https://[fec0::1]/x",
    "https://192.0.0.8/x",
    "https://198.18.0.1/x",
    "https://[2001:db8::1]/x",
    "https://[2001::1]/x",  # Teredo
    "https://localhost/x",
    "https://LocalHost./x",
    "https://api.localhost/x",
    *(f"https://{name}/x" for name in BAD_NAMES),
    "https://user:password@hooks.example.com/x",
    "https://hooks.example.com/x y",
    "https:///x",
    "ftp://hooks.example.com/x",
    "https://" + "a" * 2048 + ".example.com/",
]


def test_the_setter_refuses_each_url_leading_inside_in_production(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    resolve = FakeResolver({"hooks.example.com": [PUBLIC], **BAD_NAMES})
    policy = production(settings, resolve)
    for url in REFUSED_IN_PRODUCTION:
        with pytest.raises(ValueError) as refused:
            store.set_config(engine, cipher, org.organization_id, hook(url), policy, actor="operator:tests")
        assert "webhook URL" in str(refused.value), url
        assert store.config_row(engine, org.organization_id) is None, url
    for good in [
        "https://hooks.example.com/x",
        "https://8.8.8.8/x",
        "https://[2606:4700::1111]:8443/x",
        "https://not-resolvable-now.example.com/x",
    ]:  # checked again at every delivery
        store.set_config(engine, cipher, org.organization_id, hook(good), policy, actor="operator:tests")
        assert store.get_config(engine, cipher, org.organization_id) == hook(good)
    assert "internal.example.com" in resolve.calls  # names are resolved when set


def test_outside_production_loopback_and_http_are_allowed_unless_turned_off(settings: Settings) -> None:
    resolve = FakeResolver({"receiver.example.test": ["127.0.0.1"], **BAD_NAMES})
    dev = EgressPolicy.of(settings, resolve)
    assert settings.environment is Environment.TEST and (dev.https_only, dev.allow_loopback) == (False, True)
    for url in [
        "http://127.0.0.1:8080/x",
        "http://localhost/x",
        "http://[::1]/x",
        "http://2130706433/x",
        "http://receiver.example.test/x",
    ]:
        assert dev.check_url(url) == url
    for url in ["http://10.0.0.1/x", "http://169.254.169.254/x", "https://internal.example.com/x"]:
        with pytest.raises(ValueError):
            dev.check_url(url)
    strict = EgressPolicy.of(settings.model_copy(update={"webhook_allow_loopback": False}), resolve)
    for url in ["http://127.0.0.1:8080/x", "http://localhost/x", "http://receiver.example.test/x"]:
        with pytest.raises(ValueError):
            strict.check_url(url)
    # production ignores the setting
    loose = settings.model_copy(
        update={"environment": Environment.PRODUCTION, "webhook_allow_loopback": True}
    )
    assert (EgressPolicy.of(loose).https_only, EgressPolicy.of(loose).allow_loopback) == (True, False)


def _deliver(acts: WebhookActivities, event_id: str) -> None:
    try:
        ActivityEnvironment().run(acts.deliver_webhook, DeliverWebhookInput(event_id=event_id))
    except ApplicationError as exc:
        assert exc.type == "not_delivered"


def test_a_name_rebound_to_loopback_is_refused_at_delivery_in_production(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    """DNS rebinding: the name resolves to a public address when the URL is set, to 127.0.0.1
    when the delivery comes. Nothing reaches the (real) server listening there."""
    with receiving(lambda n: 200) as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        resolve = FakeResolver({"hooks.example.com": [[PUBLIC], ["127.0.0.1"]]})
        policy = production(settings, resolve)
        url = f"https://hooks.example.com:{port}/h"
        store.set_config(engine, cipher, org.organization_id, hook(url), policy, actor="operator:tests")
        event = create_test_event(engine, settings, org.organization_id)
        _deliver(WebhookActivities(engine, cipher, settings, policy), event.id)
        assert receiver.count() == 0
    assert resolve.calls == ["hooks.example.com", "hooks.example.com"]
    stored = store.get_event(engine, event.id)
    assert (stored.state, stored.attempts, stored.last_status) == ("pending", 1, None)
    assert stored.last_error == "address not allowed"
    [attempt] = store.attempts_of(engine, event.id)
    assert attempt.error == "address not allowed" and attempt.status_code is None


def test_the_post_goes_to_the_checked_address_under_its_name(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    """The name is resolved once per attempt, by the seam; the connection is made to that
    address (no second lookup: the system resolver does not know the name) with the original
    Host header."""
    with receiving(lambda n: 200) as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        resolve = FakeResolver({"receiver.example.test": ["127.0.0.1"]})
        policy = EgressPolicy.of(settings, resolve)
        url = f"http://receiver.example.test:{port}/hooks/mandatum"
        store.set_config(engine, cipher, org.organization_id, hook(url), policy, actor="operator:tests")
        event = create_test_event(engine, settings, org.organization_id)
        _deliver(WebhookActivities(engine, cipher, settings, policy), event.id)
        [delivery] = receiver.deliveries
    assert delivery.host == f"receiver.example.test:{port}" and delivery.signature_ok
    assert delivery.event == event.payload
    assert resolve.calls == ["receiver.example.test"] * 2  # set, then the one attempt
    assert store.get_event(engine, event.id).state == "delivered"


def _read_request(conn: socket.socket) -> None:
    """The whole HTTP request (head and Content-Length body), so the reply never races it."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = conn.recv(65536)
        if not chunk:
            return
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = next(
        (
            int(line.split(b":", 1)[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        ),
        0,
    )
    while len(body) < length:
        chunk = conn.recv(65536)
        if not chunk:
            return
        body += chunk


@contextmanager
def _tcp_server(reply: bytes | None) -> Iterator[int]:
    """A TCP server on 127.0.0.1 that answers each connection with ``reply`` (not HTTP) and closes;
    with None, a port where nothing listens."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    if reply is None:
        sock.close()
        yield port
        return
    sock.listen()
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = sock.accept()
            except OSError:
                return
            with conn:
                _read_request(conn)
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield port
    finally:
        stop.set()
        with contextlib.suppress(OSError):  # wake the accept() (closing the socket does not)
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        thread.join(5)
        sock.close()


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        (b"SSH-2.0-OpenSSH_9.6 internal-bastion\r\n", "no valid HTTP answer"),
        (b"-ERR redis secret-key-7f3a unknown command\r\n", "no valid HTTP answer"),
        (None, "connection refused"),
    ],
)
def test_the_stored_error_never_repeats_what_the_other_end_said(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
    reply: bytes | None,
    error: str,
) -> None:
    with _tcp_server(reply) as port:
        store.set_config(
            engine,
            cipher,
            org.organization_id,
            hook(f"http://127.0.0.1:{port}/h"),
            LOCAL,
            actor="operator:tests",
        )
        event = create_test_event(engine, settings, org.organization_id)
        _deliver(WebhookActivities(engine, cipher, settings, LOCAL), event.id)
    stored = store.get_event(engine, event.id)
    assert stored.last_error == error
    [attempt] = store.attempts_of(engine, event.id)
    assert attempt.error == error


def test_redirects_are_not_followed(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    reply = (
        b"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://169.254.169.254/\r\nContent-Length: 0\r\n\r\n"
    )
    with _tcp_server(reply) as port:
        store.set_config(
            engine,
            cipher,
            org.organization_id,
            hook(f"http://127.0.0.1:{port}/h"),
            LOCAL,
            actor="operator:tests",
        )
        event = create_test_event(engine, settings, org.organization_id)
        _deliver(WebhookActivities(engine, cipher, settings, LOCAL), event.id)
    stored = store.get_event(engine, event.id)
    assert (stored.state, stored.last_status, stored.last_error) == ("pending", 307, "HTTP 307")


def test_the_pinned_request_keeps_the_name_for_host_and_sni() -> None:
    url = httpx.URL("https://Hooks.Example.com:8443/in?x=1")
    target, host, extensions = pinned_request(url, ipaddress.ip_address("2606:4700::1111"))
    assert str(target) == "https://[2606:4700::1111]:8443/in?x=1"
    assert host == {"Host": "hooks.example.com:8443"}
    assert extensions == {"sni_hostname": "hooks.example.com"}
    plain, host, extensions = pinned_request(
        httpx.URL("http://bücher.example/x"), ipaddress.ip_address("93.184.215.14")
    )
    assert (str(plain), host, extensions) == ("http://93.184.215.14/x", {"Host": "xn--bcher-kva.example"}, {})


def _self_signed(directory: Path, name: str) -> tuple[Path, Path]:
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = dt.datetime.now(dt.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(hours=1))
        .not_valid_after(now + dt.timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "cert.pem", directory / "key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_path, key_path


def test_tls_goes_to_the_address_with_the_name_as_sni_and_verifies_the_certificate(tmp_path: Path) -> None:
    """A server on 127.0.0.1 with a self-signed certificate for the name: it sees the name in the
    SNI, and the client refuses its certificate (not signed by a trusted authority)."""
    cert, key = _self_signed(tmp_path, "hooks.example.test")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(cert, key)
    seen: list[str | None] = []
    context.sni_callback = lambda sock, name, ctx: seen.append(name)  # type: ignore[assignment,misc,unused-ignore]
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]

    def serve() -> None:
        conn, _ = listener.accept()
        try:
            with context.wrap_socket(conn, server_side=True):
                pass
        except (ssl.SSLError, OSError):
            pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        with pytest.raises(httpx.ConnectError) as failed:
            post_pinned(
                httpx.URL(f"https://hooks.example.test:{port}/h"),
                [ipaddress.ip_address("127.0.0.1")],
                b"{}",
                {},
                5,
            )
    finally:
        thread.join(5)
        listener.close()
    assert seen == ["hooks.example.test"]
    assert describe_failure(failed.value) == "TLS handshake failed"


def test_a_refused_address_gives_way_to_the_next_checked_one(
    engine: Engine,
    cipher: SecretCipher,
    settings: Settings,
    org: Credentials,
) -> None:
    """The receiver listens on 127.0.0.1 only: 127.0.0.2 refuses, and the next address the name
    resolved to (checked with it) is tried."""
    with receiving(lambda n: 200) as receiver:
        port = receiver.url.split(":")[2].split("/")[0]
        policy = EgressPolicy.of(settings, FakeResolver({"two.example.test": ["127.0.0.2", "127.0.0.1"]}))
        url = f"http://two.example.test:{port}/h"
        store.set_config(engine, cipher, org.organization_id, hook(url), policy, actor="operator:tests")
        event = create_test_event(engine, settings, org.organization_id)
        _deliver(WebhookActivities(engine, cipher, settings, policy), event.id)
        assert [d.host for d in receiver.deliveries] == [f"two.example.test:{port}"]
    assert store.get_event(engine, event.id).state == "delivered"


def test_every_delivery_shares_one_verifying_tls_context() -> None:
    """Loading the CA bundle costs about 20 ms: it is loaded once per process, into a context
    that still requires a certificate valid for the name (the test above: refused)."""
    from adapters.egress import tls_context

    context = tls_context()
    assert tls_context() is context
    assert context.verify_mode == ssl.CERT_REQUIRED and context.check_hostname
    assert context.cert_store_stats()["x509_ca"] > 0  # the trusted authorities are loaded
