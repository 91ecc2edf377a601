"""The published Python SDK (``humanos`` on PyPI) driven against the live stack, release by release.

Integrators run releases pinned to older API versions (``API_VERSION`` in ``humanos_sdk.client``,
sent as ``api-version`` on every call); each must work with only the base URL, the API key and the
signature secret. ``make install`` puts each release in a directory of its own
(``.venv/sdk/humanos-<version>``, without dependencies: the dev extras hold them).

- ``loaded(release)``: the release imported in this process, its directory first on ``sys.path``;
  on exit every ``humanos_sdk*`` module is purged and ``sys.path`` restored, so two releases never
  mix in one pytest worker (both name their packages ``humanos_sdk`` and ``humanos_sdk_generated``).
- ``Sdk.client(...)``: the release's ``HumanosClient`` on the live server, its REST client wrapped
  to keep every exchange (secrets left out) for the failure messages.
- ``SdkClient.call(...)``: one SDK call on a thread (the SDK is synchronous, the live server runs on
  the test's event loop), failing with the HTTP exchange when it raises or when the result is not the
  release's typed model (a 2xx status missing from a method's response map gives a silent ``None``).
- Webhooks: ``HookReceiver`` keeps each POST's headers and raw body for the release's own
  ``process_webhook`` (signature check and decryption), and ``typed_event`` parses the result into
  the release's event models.
- The subject's side and the set-up of each test go over plain signed HTTP in ``SETUP_VERSION``, the
  version that code is written against, so a test fails only on the SDK call it is about.
"""

from __future__ import annotations

import asyncio
import builtins
import importlib
import json
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest

from cli.devstack import EXAMPLE_ACTION_ID
from store import orgs
from tests.support.api_client import Credentials
from tests.support.journey_messages import CODE_RE, LINK_RE, SESSION_RE
from tests.support.live_stack import LiveStack
from tests.support.smtp_server import text_of
from tests.support.webhook_receiver import ENCRYPTION_SECRET, SALT, SIGNATURE_SECRET, Delivery, Receiver

SDK_DIR = Path(sys.prefix) / "sdk"  # make install: $(VENV)/sdk/humanos-<version>
SETUP_VERSION = "2026-11-01"  # what the set-up code below reads and sends
SDK_PACKAGES = ("humanos_sdk", "humanos_sdk_generated")
SHOWN = 3000  # characters of a body in a failure message


@dataclass(frozen=True)
class Release:
    version: str  # on PyPI
    api_version: str  # humanos_sdk.client.API_VERSION: what it sends on every call

    @property
    def id(self) -> str:
        return f"humanos-{self.version}"

    @property
    def directory(self) -> Path:
        return SDK_DIR / self.id


RELEASE_105 = Release("1.0.5", "2026-05-20")
RELEASE_120 = Release("1.2.0", "2026-09-01")
RELEASES = (RELEASE_105, RELEASE_120)


def only(release: Release) -> pytest.MarkDecorator:
    """For a test about one release's own methods: its module-scoped ``sdk`` is that release alone."""
    return pytest.mark.parametrize("sdk", [release], indirect=True, ids=[release.id])


def _is_sdk_module(name: str) -> bool:
    return name.partition(".")[0].startswith("humanos_sdk")


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= SHOWN else f"{text[:SHOWN]}... ({len(text)} characters)"


@dataclass
class Exchange:
    """One HTTP call the SDK made, as it made it (the API key and signature left out)."""

    method: str
    url: str
    headers: dict[str, str]
    body: Any
    status: int | None = None
    response: str | None = None

    def describe(self) -> str:
        parts = urlsplit(self.url)
        target = parts.path + (f"?{parts.query}" if parts.query else "")
        body = "" if self.body is None else f" body {_shown(self.body)}"
        return (
            f"{self.method} {target} headers {self.headers}{body}\n"
            f"    -> {self.status} {_shown(self.response or '')}"
        )


class RecordingTransport:
    """The release's REST client (``rest.RESTClientObject``), every exchange kept."""

    HIDDEN = frozenset({"authorization", "x-signature"})

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.exchanges: list[Exchange] = []
        self._lock = threading.Lock()

    def request(
        self,
        method: str,
        url: str,
        headers: dict[str, str] | None = None,
        body: Any = None,
        post_params: Any = None,
        _request_timeout: Any = None,
    ) -> Any:
        shown = {k: ("…" if k.lower() in self.HIDDEN else v) for k, v in (headers or {}).items()}
        exchange = Exchange(method, url, shown, body)
        with self._lock:
            self.exchanges.append(exchange)
        response = self.inner.request(
            method,
            url,
            headers=headers,
            body=body,
            post_params=post_params,
            _request_timeout=_request_timeout,
        )
        data = response.read()  # kept by the response: the SDK reads it again
        exchange.status = response.status
        exchange.response = data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)
        return response

    def since(self, start: int) -> list[Exchange]:
        with self._lock:
            return self.exchanges[start:]

    def __len__(self) -> int:
        with self._lock:
            return len(self.exchanges)


@dataclass
class Sdk:
    """One release, imported: ``package`` is ``humanos_sdk``, ``models`` its generated models."""

    release: Release
    package: Any
    models: Any
    exceptions: Any
    _transports: list[RecordingTransport] = field(default_factory=list)

    def model(self, name: str) -> Any:
        return getattr(self.models, name)

    def client(self, base_url: str, creds: Credentials) -> SdkClient:
        """The release's client configured the way its README says, on ``base_url``."""
        config = self.package.HumanosClientConfig(
            base_path=base_url, api_key=creds.api_key, signature_secret=creds.secret
        )
        client = self.package.HumanosClient(config)
        api_client = client._api_client  # the generated ApiClient both releases wrap
        transport = RecordingTransport(api_client.rest_client)
        api_client.rest_client = transport
        self._transports.append(transport)
        return SdkClient(self, client, transport)

    def close(self) -> None:
        """Close the clients' connections (the releases' own ``HumanosClient.__exit__`` calls an
        ``ApiClient.close`` the generated client does not have)."""
        for transport in self._transports:
            transport.inner.pool_manager.clear()
        self._transports.clear()


@contextmanager
def loaded(release: Release) -> Iterator[Sdk]:
    """``release`` imported from its directory; afterwards nothing of it is left in the process."""
    if not (release.directory / "humanos_sdk" / "__init__.py").is_file():
        pytest.fail(
            f"the SDK release {release.version} is not installed in {release.directory}: run `make install`",
            pytrace=False,
        )
    already = sorted(name for name in sys.modules if _is_sdk_module(name))
    assert not already, f"another SDK release is still imported in this process: {already[:5]}"
    saved_path = list(sys.path)
    sys.path.insert(0, str(release.directory))
    importlib.invalidate_caches()
    sdk: Sdk | None = None
    try:
        package = importlib.import_module("humanos_sdk")
        for name in SDK_PACKAGES:
            origin = Path(importlib.import_module(name).__file__ or "")
            assert origin.is_relative_to(release.directory), f"{name} was imported from {origin}"
        assert package.API_VERSION == release.api_version, (package.API_VERSION, release)
        sdk = Sdk(
            release,
            package,
            importlib.import_module("humanos_sdk_generated.models"),
            importlib.import_module("humanos_sdk_generated.exceptions"),
        )
        yield sdk
    finally:
        if sdk is not None:
            sdk.close()
        for name in [name for name in sys.modules if _is_sdk_module(name)]:
            del sys.modules[name]
        sys.path[:] = saved_path
        importlib.invalidate_caches()


class SdkClient:
    """A release's ``HumanosClient`` (``api``) and what it sent and got (``transport``)."""

    def __init__(self, sdk: Sdk, api: Any, transport: RecordingTransport) -> None:
        self.sdk = sdk
        self.api = api
        self.transport = transport

    def _story(self, operation: Callable[..., Any], start: int, outcome: str) -> str:
        name = getattr(operation, "__qualname__", repr(operation))
        release = self.sdk.release
        calls = "\n".join(f"  {e.describe()}" for e in self.transport.since(start)) or "  (no HTTP call)"
        return f"humanos {release.version} (API-Version {release.api_version}) {name}: {outcome}\n{calls}"

    def _expected(self, returns: str) -> type:
        found = (
            getattr(builtins, returns, None)
            if returns in ("str", "bool", "list")
            else self.sdk.model(returns)
        )
        assert isinstance(found, type), returns
        return found

    async def call(self, operation: Callable[..., Any], *args: Any, returns: str, **kwargs: Any) -> Any:
        """``operation(*args, **kwargs)`` on a thread; its result, an instance of the release's
        ``returns`` model, or an AssertionError telling what was sent and answered."""
        start = len(self.transport)
        try:
            result = await asyncio.to_thread(operation, *args, **kwargs)
        except Exception as exc:
            raise AssertionError(
                self._story(operation, start, f"raised {type(exc).__name__}: {exc}")
            ) from exc
        if not isinstance(result, self._expected(returns)):
            raise AssertionError(self._story(operation, start, f"returned {result!r} instead of a {returns}"))
        return result

    async def refusal(
        self, operation: Callable[..., Any], *args: Any, status: int, returns: str, **kwargs: Any
    ) -> Any:
        """The SDK's ``ApiException`` for a refusal with ``status``; its ``data``, which must be the
        release's typed ``returns`` model (the SDK parses a refusal's body before raising)."""
        start = len(self.transport)
        try:
            result = await asyncio.to_thread(operation, *args, **kwargs)
        except self.sdk.exceptions.ApiException as exc:
            if exc.status != status:
                raise AssertionError(
                    self._story(operation, start, f"refused with {exc.status} instead of {status}: {exc}")
                ) from exc
            if not isinstance(exc.data, self._expected(returns)):
                raise AssertionError(
                    self._story(operation, start, f"refused with {status}, its body not a {returns}")
                ) from exc
            return exc.data
        except Exception as exc:
            raise AssertionError(
                self._story(operation, start, f"raised {type(exc).__name__}: {exc}")
            ) from exc
        raise AssertionError(
            self._story(operation, start, f"returned {result!r} instead of refusing with {status}")
        )


# --- the set-up over plain HTTP, in SETUP_VERSION -------------------------------------------------


def setup_headers() -> dict[str, str]:
    return {"API-Version": SETUP_VERSION}


def new_org(live: LiveStack, release: Release) -> Credentials:
    """A fresh organization (with the example action published), pinned to the release's version,
    as its integrator would set it in the dashboard: its webhooks carry that version's shapes."""
    creds = live.new_org()
    orgs.set_api_version(live.engine, creds.organization_id, release.api_version, actor="operator:tests")
    return creds


def new_contact(prefix: str = "sdk") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:12]}@example.com"


async def until(check: Callable[[], Any], what: str, seconds: float = 30.0) -> Any:
    """``check()``'s first truthy value, polled every 50 ms."""
    deadline = time.monotonic() + seconds
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what} did not happen within {seconds:.0f} s"
        await asyncio.sleep(0.05)


async def raw(
    live: LiveStack, creds: Credentials, method: str, path: str, body: Any = None, **kw: Any
) -> httpx.Response:
    return await live.api(creds).request(method, path, body, headers=setup_headers(), **kw)


async def create_request(live: LiveStack, creds: Credentials, **overrides: Any) -> dict[str, Any]:
    """``POST /request`` (the example action, CONTACT, a fresh mailbox unless ``contacts`` is
    given): the created record."""
    body: dict[str, Any] = {
        "contacts": [new_contact()],
        "securityLevel": "CONTACT",
        "name": "Pay the rent",
        "credentials": [
            {
                "type": "POLICY",
                "name": "Rent payments",
                "scope": "payments",
                "action": {"id": EXAMPLE_ACTION_ID, "userParams": {"maxAmount": 1200}},
            }
        ],
    }
    body.update(overrides)
    created = await raw(live, creds, "POST", "/request", body)
    assert created.status_code == 201, created.text
    return dict(created.json()["data"])


async def read_request(live: LiveStack, creds: Credentials, request_id: str) -> dict[str, Any]:
    got = await raw(live, creds, "GET", f"/request/{request_id}")
    assert got.status_code == 200, got.text
    return dict(got.json())


@dataclass
class Message:
    code: str
    link: str  # the approval page's path, /r/<token>


async def message_to(live: LiveStack, contact: str, nth: int = 1) -> Message:
    """The code and link of the ``nth`` e-mail to ``contact`` (waiting for it)."""
    await until(lambda: len(live.smtp.received_for(contact)) >= nth, f"e-mail {nth} to {contact}", 20)
    text = text_of(live.smtp.received_for(contact)[nth - 1].message)
    [code] = CODE_RE.findall(text)
    [link] = LINK_RE.findall(text)
    return Message(code, link)


async def pass_code(live: LiveStack, message: Message) -> str:
    """The code entered on the approval page: the page session of the decision step."""
    passed = await live.http.post(f"{message.link}/otp", data={"code": message.code})
    assert passed.status_code == 200, passed.text
    [session] = SESSION_RE.findall(passed.text)
    return str(session)


async def decide(live: LiveStack, request: dict[str, Any], contact: str, accept: bool = True) -> None:
    """``contact`` enters the code and accepts (or rejects) every credential of ``request``."""
    message = await message_to(live, contact)
    session = await pass_code(live, message)
    choice = "accept" if accept else "reject"
    form = {"session": session, **{f"decision-{c['id']}": choice for c in request["credentials"]}}
    decided = await live.http.post(f"{message.link}/decide", data=form)
    assert decided.status_code == 200, decided.text


async def issued_mandate(live: LiveStack, creds: Credentials, **overrides: Any) -> dict[str, Any]:
    """A request whose subject accepted, read once its mandate is issued (``credentials[0].id`` the
    mandate URN); ``entityId`` is the credential's id before issuance, ``contact`` the subject's."""
    request = await create_request(live, creds, **overrides)
    contact = request["subjects"][0]["contact"]
    await decide(live, request, contact)

    async def active() -> dict[str, Any] | None:
        record = await read_request(live, creds, request["id"])
        return record if record["credentials"][0]["status"] == "ACTIVE" else None

    deadline = time.monotonic() + 30
    while (record := await active()) is None:
        assert time.monotonic() < deadline, f"no mandate issued for request {request['id']}"
        await asyncio.sleep(0.05)
    return {**record, "entityId": request["credentials"][0]["id"], "contact": contact}


async def presentation(live: LiveStack, creds: Credentials, mandate_id: str) -> dict[str, Any]:
    """A fresh VP of the mandate."""
    made = await raw(live, creds, "POST", f"/credential/{quote(mandate_id, safe='')}/presentation")
    assert made.status_code == 200, made.text
    return dict(made.json()["data"]["presentation"])


# --- webhooks -------------------------------------------------------------------------------------


def events_of(receiver: Receiver, event_type: str, request_id: str) -> list[Delivery]:
    with receiver.lock:
        return [
            d
            for d in receiver.deliveries
            if d.event is not None
            and d.event.get("eventType") == event_type
            and d.event.get("requestId") == request_id
        ]


async def wait_for_event(
    receiver: Receiver, event_type: str, request_id: str, seconds: float = 30.0
) -> Delivery:
    """The first ``event_type`` event of ``request_id`` the receiver got (it may arrive later)."""
    found: list[Delivery] = await until(
        lambda: events_of(receiver, event_type, request_id),
        f"a {event_type} event of request {request_id}",
        seconds,
    )
    return found[0]


def typed_event(sdk: Sdk, hook: Delivery, model: str) -> Any:
    """The webhook as the release's integrator reads it: ``process_webhook`` (signature, freshness,
    decryption), then ``WebhookCallEvent`` (the union of the event models) and ``model`` itself."""
    config = sdk.package.WebhookConfig(
        signature_secret=SIGNATURE_SECRET, encryption_secret=ENCRYPTION_SECRET, encryption_salt=SALT
    )
    try:
        payload = sdk.package.process_webhook(hook.raw_body.decode("utf-8"), hook.headers, config)
    except Exception as exc:
        raise AssertionError(f"humanos {sdk.release.version} process_webhook refused it: {exc}") from exc
    try:
        event = sdk.model(model).from_dict(payload)
        union = sdk.model("WebhookCallEvent").from_dict(payload).actual_instance
    except Exception as exc:
        raise AssertionError(
            f"humanos {sdk.release.version} cannot read the {payload.get('eventType')} event as {model}: "
            f"{exc}\n  payload: {_shown(payload)}"
        ) from exc
    assert isinstance(union, sdk.model(model)), (type(union), payload)
    assert isinstance(event, sdk.model(model)), (event, payload)
    return event
