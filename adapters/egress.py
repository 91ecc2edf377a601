"""Outbound HTTP to addresses an integrator chose (webhook receivers): which URLs and addresses
are allowed, and one POST pinned to the addresses that were checked.

An integrator's URL must not make the service reach its own network (server-side request
forgery). So a URL is checked where it enters (``check_url``, when the webhook is set) and again
where it is used (``resolve_checked``, at each delivery attempt): the host is resolved, *every*
address it resolves to must be allowed, and the POST connects to one of those very addresses
(``post_pinned``: the URL's host is replaced by the checked address, the original host goes in
the ``Host`` header and the TLS SNI, and the certificate is verified against that name), so a
second resolution (DNS rebinding) cannot swap the address between the check and the connection.

An address is allowed when ``ipaddress`` calls it global and none of loopback, private,
link-local, site-local, multicast, reserved or unspecified; IPv6 forms that carry an IPv4
address (IPv4-mapped ``::ffff:a.b.c.d``, NAT64 ``64:ff9b::/96``, 6to4 ``2002::/16``) are judged
by that IPv4 address. Odd IPv4 spellings (``2130706433``, ``0x7f.1``, ``0177.0.0.1``, ``127.1``)
are read the way the system's resolver reads them, so they are judged by the address they name.
Outside production, loopback addresses and plain ``http`` are allowed (the development receiver
and the tests run on 127.0.0.1) unless ``MANDATUM_WEBHOOK_ALLOW_LOOPBACK=false``; production
allows neither, whatever the setting says.
"""

from __future__ import annotations

import functools
import ipaddress
import socket
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import httpx

from core.settings import Environment, Settings
from core.text import has_space_or_control

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[[str, int], Sequence[str]]
"""``(host, port)`` → the numeric addresses the host name resolves to; socket.gaierror when none."""

URL_MAX = 2048
MAX_ADDRESSES = 2  # tried per attempt: 2 connect timeouts of 10 s stay within the 30 s attempt
NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
# IANA special-purpose ranges that are not globally reachable but that the ipaddress tables of
# older Python versions (3.11) still call global
_NOT_GLOBAL = (ipaddress.IPv4Network("192.0.0.0/24"), ipaddress.IPv6Network("3fff::/20"))
ADDRESS_NOT_ALLOWED = "address not allowed"
NOT_RESOLVED = "host name not resolved"


class UrlNotAllowed(ValueError):
    """A webhook URL (or the address it leads to) that the service will not call; the message is
    safe to show to the integrator."""


def system_resolve(host: str, port: int) -> list[str]:
    """Every address ``getaddrinfo`` gives for ``host`` (TCP), in its order, without repeats."""
    found: list[str] = []
    for *_, sockaddr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        address = str(sockaddr[0])
        if address not in found:
            found.append(address)
    return found


def numeric_address(host: str) -> IPAddress | None:
    """The address a host *literal* names, in any spelling the system's resolver accepts
    (``127.1``, ``0x7f.1``, ``2130706433``, ``::ffff:127.0.0.1``), without any lookup; None for a
    host name."""
    try:
        infos = socket.getaddrinfo(host.strip("[]"), 0, flags=socket.AI_NUMERICHOST, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError, ValueError):
        return None
    return ipaddress.ip_address(str(infos[0][4][0]).split("%", 1)[0])


def _embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _global(address: IPAddress) -> bool:
    site_local = isinstance(address, ipaddress.IPv6Address) and address.is_site_local
    return (
        address.is_global
        and not site_local
        and not any(address in net for net in _NOT_GLOBAL if net.version == address.version)
        and not (
            address.is_private
            or address.is_loopback
            or address.is_link_local
            or address.is_multicast
            or address.is_reserved
            or address.is_unspecified
        )
    )


def address_allowed(address: IPAddress, allow_loopback: bool) -> bool:
    """Whether the service may connect to ``address`` (see the module docstring)."""
    inner = _embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    judged = inner if inner is not None else address
    if judged.is_loopback:
        return allow_loopback
    return _global(judged)


@dataclass(frozen=True)
class EgressPolicy:
    """What outbound URLs may be: ``https`` only or also ``http``, loopback or not, and the
    resolver (the seam the tests replace)."""

    https_only: bool = True
    allow_loopback: bool = False
    resolve: Resolver = field(default=system_resolve, compare=False)

    @classmethod
    def of(cls, settings: Settings, resolve: Resolver = system_resolve) -> EgressPolicy:
        if settings.environment is Environment.PRODUCTION:
            return cls(https_only=True, allow_loopback=False, resolve=resolve)
        return cls(
            https_only=False, allow_loopback=settings.webhook_allow_loopback is not False, resolve=resolve
        )

    # --- the URL, where it enters ---------------------------------------------------------------

    def parse(self, url: str) -> httpx.URL:
        """The URL's shape: an absolute http(s) URL (https only in production) with a host, no
        user name or password, no whitespace, control or bidi characters, at most 2048 characters."""
        if len(url) > URL_MAX:
            raise UrlNotAllowed(f"the webhook URL must be at most {URL_MAX} characters")
        if has_space_or_control(url):
            raise UrlNotAllowed(
                "the webhook URL must not contain spaces, control or bidi override characters"
            )
        try:
            parsed = httpx.URL(url)
        except (httpx.InvalidURL, UnicodeError, ValueError) as exc:
            raise UrlNotAllowed("the webhook URL is not a valid URL") from exc
        schemes = {"https"} if self.https_only else {"http", "https"}
        if parsed.scheme not in schemes or not parsed.host:
            raise UrlNotAllowed(
                "the webhook URL must be an https URL"
                if self.https_only
                else "the webhook URL must be an http or https URL"
            )
        if parsed.userinfo:
            raise UrlNotAllowed("the webhook URL must not carry a user name or password")
        return parsed

    def check_url(self, url: str) -> str:
        """Refuse, with UrlNotAllowed, a URL of the wrong shape or leading to an address that is
        not allowed: a literal address in any spelling, a ``localhost`` name, or a name that
        resolves to such an address now. A name that does not resolve now is accepted: every
        delivery resolves and checks it again (``resolve_checked``)."""
        parsed = self.parse(url)
        host = parsed.host.rstrip(".").lower()
        refused = UrlNotAllowed(
            f"the webhook URL leads to an {ADDRESS_NOT_ALLOWED} (loopback, private, "
            "link-local, shared, multicast, reserved or unspecified)"
        )
        if not self.allow_loopback and (host == "localhost" or host.endswith(".localhost")):
            raise refused
        try:
            self.addresses(parsed)
        except UrlNotAllowed as exc:
            if str(exc) == NOT_RESOLVED:
                return url
            raise refused from exc
        return url

    # --- the addresses, where they are used -----------------------------------------------------

    def addresses(self, parsed: httpx.URL) -> list[IPAddress]:
        """The host's addresses, every one of them allowed; UrlNotAllowed(ADDRESS_NOT_ALLOWED)
        when one is not, UrlNotAllowed(NOT_RESOLVED) when there are none."""
        literal = numeric_address(parsed.host)
        if literal is not None:
            found = [literal]
        else:
            try:
                raw = self.resolve(parsed.host, parsed.port or (443 if parsed.scheme == "https" else 80))
                found = [ipaddress.ip_address(a.split("%", 1)[0]) for a in raw]
            except (OSError, UnicodeError, ValueError) as exc:
                raise UrlNotAllowed(NOT_RESOLVED) from exc
        if not found:
            raise UrlNotAllowed(NOT_RESOLVED)
        if not all(address_allowed(a, self.allow_loopback) for a in found):
            raise UrlNotAllowed(ADDRESS_NOT_ALLOWED)
        return found

    def resolve_checked(self, url: str) -> tuple[httpx.URL, list[IPAddress]]:
        """At delivery: the URL checked again (the policy may be stricter than when it was set)
        and the addresses to connect to."""
        parsed = self.parse(url)
        return parsed, self.addresses(parsed)


def pinned_request(url: httpx.URL, address: IPAddress) -> tuple[httpx.URL, dict[str, str], dict[str, str]]:
    """The URL to connect to ``address`` instead of the URL's host, the ``Host`` header and the
    request extensions (the SNI name, checked against the certificate) that keep the original
    name on the wire."""
    target = url.copy_with(host=str(address))
    host = url.netloc.decode("ascii")
    extensions = {"sni_hostname": url.raw_host.decode("ascii")} if url.scheme == "https" else {}
    return target, {"Host": host}, extensions


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The client TLS context every delivery verifies certificates with (httpx's default: the
    certifi bundle), made once per process: loading the bundle costs about 20 ms of CPU, which a
    context per attempt paid on every delivery, even to an http:// address."""
    return httpx.create_ssl_context()


ANSWER_BODY_BYTES = 2048  # what is read of a receiver's answer: the rest is never downloaded


@dataclass(frozen=True)
class Answer:
    """A receiver's answer: its status, headers and the first ``ANSWER_BODY_BYTES`` of its body."""

    status_code: int
    headers: list[tuple[str, str]]
    body: bytes


def post_pinned(
    url: httpx.URL, addresses: Sequence[IPAddress], content: bytes, headers: Mapping[str, str], timeout: float
) -> Answer:
    """One POST to the first of ``addresses`` that accepts a connection (the next one only when
    connecting fails, at most ``MAX_ADDRESSES`` tried so an attempt ends within its activity's
    timeout), never following a redirect, ignoring proxy settings of the environment (a proxy
    would connect wherever it resolves the name). The certificate is verified against the name.
    Of the answer's body only the first ``ANSWER_BODY_BYTES`` are read: a receiver answering
    gigabytes costs nothing."""
    with httpx.Client(
        timeout=timeout, follow_redirects=False, trust_env=False, verify=tls_context()
    ) as client:
        last: httpx.HTTPError | None = None
        for address in addresses[:MAX_ADDRESSES]:
            target, host, extensions = pinned_request(url, address)
            request = client.build_request(
                "POST", target, content=content, headers={**headers, **host}, extensions=extensions
            )
            try:
                response = client.send(request, stream=True)
            except (httpx.ConnectError, httpx.ConnectTimeout) as exc:
                last = exc
                continue
            try:
                return Answer(response.status_code, list(response.headers.items()), _first_bytes(response))
            finally:
                response.close()
        assert last is not None
        raise last


def _first_bytes(response: httpx.Response) -> bytes:
    read = bytearray()
    for chunk in response.iter_raw():
        read += chunk
        if len(read) >= ANSWER_BODY_BYTES:
            break
    return bytes(read[:ANSWER_BODY_BYTES])


def _causes(exc: BaseException) -> list[BaseException]:
    chain: list[BaseException] = []
    current: BaseException | None = exc
    while current is not None and len(chain) < 10:
        chain.append(current)
        current = current.__cause__ or current.__context__
    return chain


def describe_failure(exc: httpx.HTTPError) -> str:
    """What the integrator may read about a failed attempt: a fixed phrase per kind of failure,
    never the text of the exception (which can quote what the other end sent)."""
    chain = _causes(exc)
    if isinstance(exc, httpx.ConnectTimeout):
        return "connection timed out"
    if isinstance(exc, httpx.ConnectError):
        if any(isinstance(c, ssl.SSLError) for c in chain):
            return "TLS handshake failed"
        if any(isinstance(c, ConnectionRefusedError) for c in chain):
            return "connection refused"
        return "connection failed"
    if isinstance(exc, httpx.TimeoutException):
        return "no answer in time"
    if isinstance(exc, httpx.RemoteProtocolError):
        return "no valid HTTP answer"
    if isinstance(exc, httpx.TransportError):
        return "connection lost"
    return "request failed"
